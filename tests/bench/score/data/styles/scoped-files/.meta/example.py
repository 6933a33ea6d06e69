def write_lines(opener, lines):
    with opener() as out:
        for line in lines:
            out.write(line + "\n")
    return len(lines)


class Tally:
    def __init__(self):
        self.total = 0
        self.closed = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.closed = True
        return False

    def add(self, n):
        self.total += n
