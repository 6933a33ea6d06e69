import pytest

from retry_calls import compose, retry


def flaky(failures):
    left = [failures]

    def call():
        if left[0]:
            left[0] -= 1
            raise ConnectionError("not yet")
        return "done"

    return call


def test_first_try():
    assert retry(lambda: 42, 3) == 42


def test_succeeds_after_failures():
    assert retry(flaky(2), 3) == "done"


def test_gives_up_with_the_last_error():
    with pytest.raises(ConnectionError, match="not yet"):
        retry(flaky(5), 2)


def test_compose_applies_right_to_left():
    assert compose(abs, lambda x: x - 10)(3) == 7


def test_compose_of_builtins():
    assert compose(len, str)(12345) == 5
