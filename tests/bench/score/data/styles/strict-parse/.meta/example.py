class InvalidAge(ValueError):
    def __init__(self, text):
        super().__init__(f"not an age: {text!r}")
        self.text = text


def parse_age(text):
    try:
        age = int(text)
    except ValueError:
        raise InvalidAge(text) from None
    if not 0 <= age <= 150:
        raise InvalidAge(text)
    return age


def describe(error):
    return f"{type(error).__name__}: {error}"


def reraise(error):
    raise error
