class TallyCounter:
    """Counts events by label."""

    def __init__(self):
        pass

    def add(self, label, times=1):
        pass

    def count(self, label):
        pass

    def total(self):
        pass

    def reset(self):
        pass
