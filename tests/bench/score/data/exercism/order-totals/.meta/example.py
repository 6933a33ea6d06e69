from price_list import PRICES


def order_total(order):
    """The price of an order: a list of (item, quantity) pairs, in cents."""
    return sum(PRICES[item] * quantity for item, quantity in order)
