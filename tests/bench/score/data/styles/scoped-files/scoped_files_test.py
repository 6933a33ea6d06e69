import contextlib
import io

from scoped_files import Tally, write_lines


class Recorder:
    def __init__(self):
        self.entered = self.exited = False
        self.buffer = io.StringIO()

    def __enter__(self):
        self.entered = True
        return self.buffer

    def __exit__(self, *exc):
        self.exited = True
        return False


def test_lines_are_written_inside_the_block():
    recorder = Recorder()
    assert write_lines(lambda: recorder, ["a", "b"]) == 2
    assert recorder.entered and recorder.exited
    assert recorder.buffer.getvalue() == "a\nb\n"


def test_a_contextlib_manager():
    seen = []

    @contextlib.contextmanager
    def opener():
        buffer = io.StringIO()
        yield buffer
        seen.append(buffer.getvalue())

    assert write_lines(opener, ["x"]) == 1
    assert seen == ["x\n"]


def test_tally_sums_inside_with():
    with Tally() as tally:
        tally.add(2)
        tally.add(5)
    assert tally.total == 7
    assert tally.closed is True


def test_tally_starts_at_zero():
    with Tally() as tally:
        pass
    assert tally.total == 0
