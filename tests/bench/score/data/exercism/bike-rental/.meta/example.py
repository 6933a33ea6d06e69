HOURLY_CENTS = 300
DAY_CAP_CENTS = 2000


def started_hours(minutes):
    """Hours begun by a rental of `minutes` minutes."""
    return -(-minutes // 60)


def rental_price(minutes, member=False):
    if minutes <= 0:
        raise ValueError("a rental lasts at least a minute")
    cents = min(started_hours(minutes) * HOURLY_CENTS, DAY_CAP_CENTS)
    return cents * 9 // 10 if member else cents


def receipt(minutes, member=False):
    cents = rental_price(minutes, member)
    return f"{minutes} min: {cents // 100}.{cents % 100:02d} EUR"
