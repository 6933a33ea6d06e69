def band(score):
    """The letter band of a score from 0 to 100."""
    pass
