"""The options each program that runs by rule may be given, by name (agent/rules.py says how they are used).

Only options that choose, show or stop: none that writes a file, reads its value from a file, follows symlinks out
of the repository or loads code. A value's kind says whether it is a path (it must stay inside the repository) or
any text.
"""

from __future__ import annotations

from dataclasses import dataclass, field

PATH, TEXT = "path", "text"  # what an option's value is: a path (must stay inside), or anything else


@dataclass(frozen=True)
class Options:
    flags: str = ""  # short options without a value; they may be bundled (-la)
    valued: dict[str, str] = field(default_factory=dict)  # short option -> PATH or TEXT
    long_flags: frozenset[str] = frozenset()
    long_valued: dict[str, str] = field(default_factory=dict)  # --name -> PATH or TEXT (--name=V or --name V)
    long_attached: frozenset[str] = frozenset()  # --name=V only: the value is optional, or the tool's parser unclear
    numeric: bool = False  # `-20` is allowed (head, tail, git log)


def _names(names: str) -> list[str]:
    return names.split()


def _longs(names: str) -> frozenset[str]:
    return frozenset(f"--{name}" for name in _names(names))


def _valued(kind: str, names: str) -> dict[str, str]:
    return {(f"--{name}" if len(name) > 1 else name): kind for name in _names(names)}


LS = Options("1aAdFhilnoprRsStuUvx", long_flags=_longs("all almost-all human-readable recursive directory"))
CAT = Options("AbeEnstTuv", long_flags=_longs("number number-nonblank show-all squeeze-blank"))
HEAD = Options("qv", _valued(TEXT, "n c"), _longs("quiet silent verbose"), _valued(TEXT, "lines bytes"), numeric=True)
GREP = Options(
    flags="abcEFGhHiIlLnoPqrsTUvwxzZ",
    valued=_valued(TEXT, "e m A B C"),
    long_flags=_longs(
        "ignore-case invert-match word-regexp line-regexp count files-with-matches files-without-match line-number "
        "no-filename with-filename only-matching quiet silent no-messages recursive extended-regexp fixed-strings "
        "basic-regexp perl-regexp text"
    ),
    long_valued=_valued(TEXT, "regexp max-count after-context before-context context include exclude exclude-dir"),
    long_attached=_longs("color colour"),
)
WC = Options("clmwL", long_flags=_longs("bytes chars lines words max-line-length"))
PYTEST = Options(
    "qvxslhV",
    _valued(TEXT, "k m r"),
    _longs(
        "quiet verbose exitfirst showlocals last-failed lf failed-first ff new-first nf stepwise sw stepwise-skip "
        "collect-only co no-header no-summary strict-markers strict fixtures fixtures-per-test markers help version "
        "full-trace disable-warnings runxfail setup-show setup-plan cache-show doctest-modules"
    ),
    {
        **_valued(
            TEXT,
            "tb maxfail durations durations-min color code-highlight capture show-capture deselect ignore-glob "
            "import-mode log-level log-cli-level assert verbosity",
        ),
        **_valued(PATH, "ignore"),
    },
)
GIT = {
    "status": Options("sb", long_flags=_longs("short branch long porcelain")),
    "diff": Options(
        "w",
        long_flags=_longs(
            "stat cached staged name-only name-status no-color shortstat numstat summary ignore-all-space "
            "ignore-space-change no-ext-diff no-textconv raw exit-code check"
        ),
    ),
    "log": Options(
        "p",
        _valued(TEXT, "n"),
        _longs(
            "oneline stat patch graph all decorate no-decorate reverse name-only name-status follow no-color "
            "first-parent no-merges merges shortstat"
        ),
        long_attached=_longs("max-count format pretty since until author grep skip"),
        numeric=True,
    ),
    "show": Options(
        "ps",
        long_flags=_longs("stat name-only name-status oneline no-color no-patch patch shortstat"),
        long_attached=_longs("format pretty"),
    ),
}

# find: the expression after the starting points, primary by primary (whether each takes a value, and its kind).
FIND_OPERATORS = frozenset(_names("! -not -a -and -o -or ( ) ,"))
FIND_PLAIN = frozenset(
    _names(
        "-print -print0 -empty -true -false -prune -quit -ls -depth -xdev -mount -readable -writable -executable "
        "-nouser -nogroup"
    )
)
FIND_VALUED = {
    **dict.fromkeys(
        _names(
            "-name -iname -path -ipath -wholename -iwholename -regex -iregex -regextype -type -xtype -size -mtime "
            "-mmin -atime -amin -ctime -cmin -perm -user -group -uid -gid -links -inum -maxdepth -mindepth -printf "
            "-newermt"
        ),
        TEXT,
    ),
    **dict.fromkeys(_names("-newer -anewer -cnewer -samefile"), PATH),
}
