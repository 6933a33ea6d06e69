def countdown(n):
    yield from ()


def take(iterable, k):
    return []


def pairs(items):
    yield from ()
