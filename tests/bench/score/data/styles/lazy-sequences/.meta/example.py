import itertools


def countdown(n):
    while n > 0:
        yield n
        n -= 1


def take(iterable, k):
    return list(itertools.islice(iterable, k))


def pairs(items):
    yield from zip(items, items[1:])
