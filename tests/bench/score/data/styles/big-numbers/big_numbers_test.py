from big_numbers import digit_sum, halve, power_plus


def test_a_5000_digit_result():
    assert power_plus(5000, 7) == 10**5000 + 7


def test_a_5000_digit_argument():
    assert digit_sum(10**5000 - 1) == 45000


def test_halving_a_huge_number():
    assert halve(2 * (10**5000)) == 10**5000


def test_small_numbers_still_work():
    assert digit_sum(1234) == 10
