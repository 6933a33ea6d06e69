import datetime
import decimal
import fractions


class Money(decimal.Decimal):
    pass


class Day(datetime.date):
    pass


class Ratio(fractions.Fraction):
    pass


def price(text):
    return Money(decimal.Decimal(text).quantize(decimal.Decimal("0.01"), rounding=decimal.ROUND_HALF_UP))


def next_day(day):
    following = day + datetime.timedelta(days=1)
    return Day(following.year, following.month, following.day)


def ratio(a, b):
    return Ratio(a, b)
