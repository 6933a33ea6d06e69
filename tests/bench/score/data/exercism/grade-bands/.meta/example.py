def band(score):
    """The letter band of a score from 0 to 100."""
    if not 0 <= score <= 100:
        raise ValueError("score must be between 0 and 100")
    for lowest, letter in ((90, "A"), (80, "B"), (70, "C"), (60, "D")):
        if score >= lowest:
            return letter
    return "F"
