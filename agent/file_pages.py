"""The part of a file that read_file shows, read without holding the file: only the page stays in memory.

A page starts at a line (`offset`) or a character (`char_offset`) and holds at most `limit` lines and FILE_LIMIT
(or `char_limit`) characters, ending on a whole line where one fits; a note says what was shown and names the call
that shows the next part. The file is read as text in pieces (UTF-8, bad bytes replaced, line ends made `\n`, as
Path.read_text reads it): up to the page to find where it starts, past it only to count its characters, so a file
of 512 MiB costs its reading time, not its size in memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agent import prompts

FILE_LIMIT = 12_000  # characters of a file that read_file returns
CHUNK_CHARS = 1 << 20


@dataclass(frozen=True)
class Page:
    text: str
    truncated: bool


@dataclass(frozen=True)
class _Window:
    text: str  # the file's text from `start`, at most FILE_LIMIT characters
    start: int  # where it starts in the file, in characters
    line: int  # the 1-based number of the line that holds `start`
    total: int  # the file's length in characters


def read_page(
    path: str,
    real: Path,
    offset: int | None = None,
    limit: int | None = None,
    char_offset: int | None = None,
    char_limit: int | None = None,
) -> Page:
    """The page of the file at `real` (named `path` to the model) that these arguments ask for."""
    return _page(path, _file_window(real, offset, char_offset), limit, char_limit)


def show_part(
    path: str,
    text: str,
    offset: int | None = None,
    limit: int | None = None,
    char_offset: int | None = None,
    char_limit: int | None = None,
) -> Page:
    """The same page, of a text already in memory."""
    at_line = _nth_line_start(text, (offset or 1) - 1) if char_offset is None else None
    start = min(char_offset, len(text)) if char_offset is not None else at_line or 0
    line = text.count("\n", 0, start) + 1
    return _page(path, _Window(text[start : start + FILE_LIMIT], start, line, len(text)), limit, char_limit)


def _page(path: str, window: _Window, limit: int | None, char_limit: int | None) -> Page:
    text, start, total = window.text, window.start, window.total
    end = start + _nth_line_start(text, limit) if limit else total  # after `limit` line ends
    end = min(end, start + min(char_limit or FILE_LIMIT, FILE_LIMIT))
    if end < total and "\n" in text[: end - start]:
        end = start + text.rindex("\n", 0, end - start) + 1  # end on a whole line, so reading on starts on the next
    shown_text = text[: end - start]
    if start == 0 and end == total:
        return Page(shown_text, False)
    last_line = window.line + text.count("\n", 0, max(0, end - 1 - start))
    shown = f"lines {window.line}-{last_line} (characters {start}-{end - 1})"
    if end >= total:
        return Page(shown_text + prompts.read_to_end(shown, total), False)
    at_line_start = shown_text.endswith("\n")
    position = {"offset": window.line + shown_text.count("\n")} if at_line_start else {"char_offset": end}
    return Page(shown_text + prompts.read_on(path, shown, total, position), True)


def _nth_line_start(text: str, lines: int) -> int:
    """Where the text after its first `lines` line ends starts (its length when it has fewer)."""
    position = 0
    for _ in range(lines):
        found = text.find("\n", position)
        if found < 0:
            return len(text)
        position = found + 1
    return position


def _file_window(real: Path, offset: int | None, char_offset: int | None) -> _Window:
    """The window of the file that a page at `offset` (a line) or `char_offset` (a character) starts, read in
    pieces; the rest of the file is only counted."""
    position, line_ends, pieces, kept = 0, 0, [], 0
    start: int | None = None
    line = 1
    lines_before = (offset or 1) - 1  # line ends to pass before a page that starts at a line
    with open(real, encoding="utf-8", errors="replace") as f:
        for chunk in iter(lambda: f.read(CHUNK_CHARS), ""):
            at = 0
            if start is None:
                if char_offset is not None and char_offset < position + len(chunk):
                    at = char_offset - position
                    start, line = char_offset, line_ends + chunk.count("\n", 0, at) + 1
                elif char_offset is None and line_ends + chunk.count("\n") >= lines_before:
                    at = _nth_line_start(chunk, lines_before - line_ends)
                    start, line = position + at, lines_before + 1
                else:
                    line_ends += chunk.count("\n")
            if start is not None and kept < FILE_LIMIT:
                piece = chunk[at : at + FILE_LIMIT - kept]
                pieces.append(piece)
                kept += len(piece)
            position += len(chunk)
    if start is None:  # the page starts at the end: the offset is past it
        start, line = position, line_ends + 1
    return _Window("".join(pieces), start, line, position)
