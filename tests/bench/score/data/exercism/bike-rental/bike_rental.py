HOURLY_CENTS = 300
DAY_CAP_CENTS = 2000


def started_hours(minutes):
    """Hours begun by a rental of `minutes` minutes."""
    return -(-minutes // 60)


def rental_price(minutes, member=False):
    pass


def receipt(minutes, member=False):
    pass
