"""A calculator module: it adds, subtracts and multiplies."""


def add(a, b):
    return a + b


def sub(a, b):
    """Return a minus b."""
    return a - b


def mul(a, b):
    """Return a times b."""
    return a * b
