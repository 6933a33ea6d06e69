class TallyCounter:
    """Counts events by label."""

    def __init__(self):
        self._counts = {}

    def add(self, label, times=1):
        if times < 1:
            raise ValueError("times must be positive")
        self._counts[label] = self._counts.get(label, 0) + times

    def count(self, label):
        return self._counts.get(label, 0)

    def total(self):
        return sum(self._counts.values())

    def reset(self):
        self._counts.clear()
