def write_lines(opener, lines):
    return 0


class Tally:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def add(self, n):
        pass
