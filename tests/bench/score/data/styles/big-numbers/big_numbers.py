def power_plus(exponent, extra):
    return 10**exponent


def digit_sum(number):
    return 0


def halve(number):
    return number // 2
