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
    return Money(text)


def next_day(day):
    return Day(day.year, day.month, day.day)


def ratio(a, b):
    return Ratio(a, b)
