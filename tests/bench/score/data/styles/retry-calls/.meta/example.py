def retry(function, attempts):
    for attempt in range(attempts):
        try:
            return function()
        except Exception:
            if attempt == attempts - 1:
                raise


def compose(f, g):
    return lambda x: f(g(x))
