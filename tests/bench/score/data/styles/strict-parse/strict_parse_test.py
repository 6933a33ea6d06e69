import pytest

from strict_parse import InvalidAge, describe, parse_age, reraise


def test_a_plain_age():
    assert parse_age("42") == 42


def test_words_are_refused_with_the_text():
    with pytest.raises(InvalidAge, match="not an age: 'old'") as caught:
        parse_age("old")
    assert caught.value.text == "old"


def test_out_of_range_is_a_value_error():
    with pytest.raises(ValueError):
        parse_age("200")


def test_describe_a_standard_exception():
    assert describe(KeyError("key")) == "KeyError: 'key'"


def test_describe_with_arguments():
    assert describe(ValueError("bad", 3)) == "ValueError: ('bad', 3)"


def test_reraise_gives_back_the_same_class_and_message():
    with pytest.raises(LookupError, match="missing"):
        reraise(LookupError("missing"))
