import itertools

from lazy_sequences import countdown, pairs, take


def test_countdown_is_lazy_and_ends():
    numbers = countdown(3)
    assert next(numbers) == 3
    assert list(numbers) == [2, 1]


def test_take_from_an_endless_generator_of_the_tests():
    assert take(itertools.count(5), 3) == [5, 6, 7]


def test_take_from_a_generator_expression():
    assert take((n * n for n in range(10)), 4) == [0, 1, 4, 9]


def test_pairs():
    assert list(pairs([1, 2, 3])) == [(1, 2), (2, 3)]


def test_empty_countdown():
    assert list(countdown(0)) == []
