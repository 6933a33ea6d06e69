def next_light(light):
    """The colour that follows `light`."""
    pass
