def power_plus(exponent, extra):
    return 10**exponent + extra


def digit_sum(number):
    total = 0
    while number:
        number, digit = divmod(number, 10)
        total += digit
    return total


def halve(number):
    return number // 2
