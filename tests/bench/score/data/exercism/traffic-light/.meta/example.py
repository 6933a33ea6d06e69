RED = "red"
AMBER = "amber"
GREEN = "green"

_FOLLOWING = {RED: GREEN, GREEN: AMBER, AMBER: RED}


def next_light(light):
    """The colour that follows `light`."""
    return _FOLLOWING[light]
