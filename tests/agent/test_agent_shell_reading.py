"""The safe-command rule reads a command as bash does, and anything it does not model asks for approval.

Three kinds of proof, all with real bash in a throwaway repository that has a canary folder beside it (a secret, and
$HOME and $OLDPWD pointing there):
- the published attacks, each refused, and each run for real where that shows what it would have done;
- for generated commands the reader accepts, bash hands the program exactly the words the reader found;
- for generated commands judged safe, running them changes nothing outside the repository, leaks no secret and
  leaves the protected test as it was.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from agent_helpers import CALC, TEST_CALC, RunAgent
from hypothesis import given
from hypothesis import strategies as st
from hypothesis_settings import examples

from agent.rules import PROGRAMS_RUN_BY_RULE, is_safe
from agent.shell_words import Unsupported, expand, read_pipeline
from bench.testing import fake_llama as fl
from bench.testing.fake_llama import FakeLlama

SECRET = "CANARY-SECRET-7f3a"
BASH = shutil.which("bash") or "/bin/bash"


@dataclass(frozen=True)
class Sandbox:
    base: Path
    repo: Path
    canary: Path
    home: Path

    def env(self) -> dict[str, str]:
        path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"  # pytest, python: this venv's
        home = {"HOME": str(self.home), "OLDPWD": str(self.canary)}
        return {**os.environ, **home, "PATH": path, "LC_ALL": "C", "PYTHONDONTWRITEBYTECODE": "1"}

    def bash(self, command: str, timeout: float = 20) -> str:
        done = subprocess.run(
            [BASH, "-c", command],
            cwd=self.repo,
            env=self.env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        return (done.stdout + done.stderr).decode("utf-8", errors="replace")

    def outside(self) -> dict[str, str]:
        """Everything beside the repository (the trace of an agent run and its request log left out), by path:
        content or link."""
        state = {}
        for folder, dirs, files in os.walk(self.base):
            if Path(folder) == self.base:
                dirs[:] = [d for d in dirs if d != "repo"]
            for name in [*dirs, *files]:
                path = Path(folder) / name
                if path.name in ("events.jsonl", "events.requests.jsonl"):
                    continue
                if path.is_symlink():
                    state[str(path)] = "-> " + os.readlink(path)
                elif path.is_file():
                    state[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
                else:
                    state[str(path)] = "dir"
        return state

    def protected(self) -> bytes:
        return (self.repo / "test_calc.py").read_bytes()


def make_sandbox(base: Path) -> Sandbox:
    repo, canary, home = base / "repo", base / "canary", base / "home"
    for folder in (repo / "sub", canary, home):
        folder.mkdir(parents=True)
    (canary / "secret.txt").write_text(f"{SECRET} def add\n")  # found by the greps the tests run
    (canary / "patterns").write_text("def\n")
    (canary / f"{SECRET}.name").write_text("a name that must not be listed either\n")
    (home / "secret.txt").write_text(f"{SECRET}\n")
    (repo / "calc.py").write_text(CALC)
    (repo / "test_calc.py").write_text(TEST_CALC)
    (repo / "sub" / "notes.txt").write_text("notes\n")
    (repo / "args.txt").write_text("--junitxml=../canary/junit.xml\n")
    (repo / "list0").write_bytes(b"../canary/secret.txt\0")
    (repo / "--basetemp=..").write_text("a file whose name is a pytest option\n")
    (repo / "link_out").symlink_to(canary)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "calc.py", "test_calc.py"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "start"], cwd=repo, check=True)
    return Sandbox(base, repo, canary, home)


@pytest.fixture
def sandbox(tmp_path: Path, child_processes: None) -> Sandbox:
    return make_sandbox(tmp_path / "base")


@pytest.fixture(scope="module")
def shared_sandbox(tmp_path_factory: pytest.TempPathFactory, child_processes: None) -> Iterator[Sandbox]:
    yield make_sandbox(tmp_path_factory.mktemp("shell-reading") / "base")


# (command, what running it for real does: a file it creates outside, "leak" (the secret in its output), or None)
ATTACKS: list[tuple[str, str | None]] = [
    ("ls a#;touch ../canary/hash-ls", "canary/hash-ls"),
    ("cat x#;touch ../canary/hash-cat", "canary/hash-cat"),
    ("ls a#;(sleep 0.2; echo overwritten > test_calc.py) &", None),  # a background job that outlives the command
    ("pytest -q @args.txt", "canary/junit.xml"),
    ("python -m pytest @args.txt", "canary/junit.xml"),
    ("pytest -q *", None),  # `*` matches the file named --basetemp=.., which pytest would empty
    ("cat ~-/secret.txt", "leak"),
    ("cat ~/secret.txt", "leak"),
    ("cat ~+/../canary/secret.txt", "leak"),
    ("grep -hf../canary/patterns -r .", None),  # bundled short options hide the value of -f
    ("grep -rhf ../canary/patterns .", None),
    ("grep -R CANARY .", "leak"),  # -R follows link_out out of the repository
    ("find -L . -name secret.txt", None),
    ("find . -follow -name secret.txt", None),
    ("ls -L link_out", None),
    ("wc --files0-from=list0", None),
    ("tail -f calc.py", None),
    ("cat <<EOF\nx\nEOF", None),
    ("cat <<<x", None),
    ("cat <(cat ../canary/secret.txt)", "leak"),
    ("cat {../canary/secret.txt,calc.py}", "leak"),
    ("cat {..,.}/canary/secret.txt", "leak"),
    ("cat ../canar?/secret.txt", "leak"),
    ("cat */../../canary/secret.txt", "leak"),
    ("cat link_out/*", "leak"),
    ("cat .?/canary/secret.txt", None),
    ("cat [.][.]/canary/secret.txt", None),
    ("cat $(echo ../canary/secret.txt)", "leak"),
    ("cat `echo ../canary/secret.txt`", "leak"),
    ('cat "$OLDPWD/secret.txt"', "leak"),
    ("cat \\$HOME", None),
    ("ls # && touch ../canary/comment", None),
    ("ls\ntouch ../canary/newline", "canary/newline"),
    ("ls |& cat", None),
    ("ls 2>../canary/err", "canary/err"),
    ("ls 2>&1>../canary/out", "canary/out"),
    ("git diff --no-index ../canary/secret.txt calc.py", "leak"),
    ("git log --output=../canary/log.txt", "canary/log.txt"),
    ("git -C .. status", None),
    ("git diff --pretty ../canary/secret.txt", None),
    ("head -n -1 ../canary/secret.txt", None),
    ("cat ../canary/secret.txt", "leak"),
    ("ls -d a=~", None),
    ("! cat calc.py", None),
    ("cat\u00a0calc.py", None),  # a no-break space is not a blank to bash
    ("pytest --co -q -p no:cacheprovider", None),
]


@pytest.mark.parametrize(("command", "effect"), ATTACKS, ids=[c for c, _ in ATTACKS])
def test_every_published_attack_needs_approval(shared_sandbox: Sandbox, command: str, effect: str | None) -> None:
    assert not is_safe(command, shared_sandbox.repo)


REAL = [(c, e) for c, e in ATTACKS if e is not None]


def test_the_attacks_do_what_they_say_when_bash_runs_them(sandbox: Sandbox) -> None:
    """Run for real, each attack reaches outside: so refusing them is what keeps the canary safe."""
    for command, effect in REAL:
        output = sandbox.bash(command)
        if effect == "leak":
            assert SECRET in output, command
        else:
            assert (sandbox.base / str(effect)).exists(), command


def test_the_agent_refuses_them_all_and_nothing_outside_changes(run_agent: RunAgent, sandbox: Sandbox) -> None:
    before = sandbox.outside()
    calls = [("run", {"command": command}) for command, _ in ATTACKS]
    with FakeLlama([fl.tool_calls(calls), fl.prose("done")]) as flint:
        run = run_agent(sandbox.repo, flint.url, "--approve", "no")
        results = [m["content"] for m in flint.requests[-1]["messages"] if m["role"] == "tool"]
    assert [(a["decision"], a["by"]) for a in run.of("approval")] == [("refused", "flag")] * len(ATTACKS)
    assert all("was not run" in r for r in results) and not any(SECRET in r for r in results)
    assert sandbox.outside() == before and sandbox.protected() == TEST_CALC.encode()


def test_a_hash_inside_a_word_is_part_of_the_word_as_for_bash(shared_sandbox: Sandbox) -> None:
    assert [w.text for w in read_pipeline("cat a#b 'c d'#e")[0]] == ["cat", "a#b", "c d#e"]
    assert is_safe("cat calc.py#", shared_sandbox.repo) and is_safe("git show HEAD~1", shared_sandbox.repo)


# Generated commands: words of safe commands (drawn more often) and of attacks, joined with blanks or nothing.
PROGRAMS = [
    "ls",
    "cat",
    "head",
    "tail",
    "grep",
    "wc",
    "find",
    "git status",
    "git diff",
    "git log",
    "git show",
    "pytest",
    "python -m pytest",
    "echo",
    "touch",
    "rm -f",
    "tee",
    "sh -c",
    "python",
    "sed -i",
    "env",
    "x=1",
]
PLAIN = [
    "calc.py",
    "test_calc.py",
    "sub",
    "sub/notes.txt",
    ".",
    "*",
    "*.py",
    "sub/*",
    "?alc.py",
    "'*'",
    "-n",
    "5",
    "-n5",
    "-20",
    "-r",
    "-l",
    "-i",
    "-la",
    "-rn",
    "-e",
    "def",
    "'def add'",
    "-name",
    "'*.py'",
    "-type",
    "f",
    "--include=*.py",
    "--oneline",
    "--stat",
    "HEAD",
    "HEAD~1",
    "-q",
    "-x",
    "--co",
    "-k",
    "add",
    "--tb=short",
    "a#",
    "2>&1",
    "|",
    "'a b'",
    '"a b"',
    "--",
    "-",
    "'a'\"b\"c",
    "\\x",
    "=",
]
HOSTILE = [
    "..",
    "l*",
    "../canary/secret.txt",
    "link_out",
    "link_out/secret.txt",
    "~",
    "~-",
    "~+",
    "~/secret.txt",
    "a=~",
    "-R",
    "-L",
    "-LR",
    "-hf../canary/patterns",
    "-f",
    "-c",
    "-p",
    "-o",
    "-exec",
    "-delete",
    "-fprint",
    "-newer",
    "--files0-from=list0",
    "--output=../canary/o",
    "@args.txt",
    "--junitxml=../canary/j.xml",
    "--basetemp=../canary",
    "#",
    "#x",
    ";",
    "&",
    "&&",
    "||",
    ">",
    ">>",
    "<",
    "<<EOF",
    "<(cat ../canary/secret.txt)",
    "$(touch ../canary/sub)",
    "`touch ../canary/bq`",
    "$HOME",
    "${OLDPWD}",
    "'$HOME'",
    '"$HOME"',
    "{a,b}",
    "{../canary/secret.txt,calc.py}",
    "[ab]*",
    ".*",
    ".?",
    "\\;",
    "\\",
    "'",
    '"',
    "!",
    "touch ../canary/t",
    ":",
    "=:~",
    "\t",
    "\n",
    "\u00a0",
    "é",
]
WORDS = st.sampled_from(PLAIN * 3 + HOSTILE)
SEPARATORS = st.sampled_from([" ", " ", " ", " ", "", "\t"])


# Safe commands, each to be changed by a word or two inserted anywhere: that probes every boundary of the rule.
TEMPLATES = [
    "ls -la sub",
    "ls",
    "ls -R",
    "cat calc.py",
    "head -n 5 calc.py",
    "tail -n 2 calc.py | wc -l",
    "grep -rn def .",
    "grep -c add calc.py",
    "wc -l calc.py",
    "find . -name '*.py'",
    "find sub -type f",
    "git status",
    "git log --oneline -3",
    "git diff HEAD",
    "git show HEAD --stat",
    "cat *.py | grep add",
    "pytest -q",
    "python -m pytest -q -x",
    "head -20 sub/notes.txt",
    "grep -e add -r sub .",
]


ONE_PER_PROGRAM = [
    "ls -la .",
    "cat calc.py",
    "head -n 5 calc.py",
    "tail -c 9 calc.py",
    "grep -rn def .",
    "wc -l calc.py",
    "find sub -name '*.txt'",
    "git log --oneline -3",
]


@st.composite
def random_commands(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(PROGRAMS))
    for part in draw(st.lists(WORDS, max_size=5)):
        text += draw(SEPARATORS) + part
    return text


@st.composite
def changed_safe_commands(draw: st.DrawFn) -> str:
    """A safe command with one word of an attack inserted, glued to its neighbours or not (and maybe one more)."""
    words = draw(st.sampled_from(TEMPLATES)).split(" ")
    words.insert(draw(st.integers(1, len(words))), draw(st.sampled_from(HOSTILE)))
    if draw(st.booleans()):
        words.insert(draw(st.integers(1, len(words))), draw(st.sampled_from(PLAIN)))
    text = words[0]
    for word in words[1:]:
        text += draw(SEPARATORS) + word
    return text


def commands() -> st.SearchStrategy[str]:
    return st.one_of(random_commands(), changed_safe_commands())


# Each program that runs by rule replaced by a function that prints the words bash hands it.
SHOW_WORDS = "".join(f"{p}() {{ printf '%s\\0' {p} \"$@\"; }}\n" for p in sorted(PROGRAMS_RUN_BY_RULE))


@examples(400)
@given(commands())
def test_the_reader_finds_the_words_bash_finds(shared_sandbox: Sandbox, command: str) -> None:
    try:
        pipeline = read_pipeline(command)
    except Unsupported:
        return
    last = pipeline[-1]
    if last[0].text not in PROGRAMS_RUN_BY_RULE or last[0].pattern is not None:
        return
    ours = [last[0].text] + [text for word in last[1:] for text in expand(word, shared_sandbox.repo)]
    bash_words = shared_sandbox.bash(SHOW_WORDS + command, timeout=10).split("\0")[:-1]
    assert bash_words == ours


@examples(150)
@given(commands())
def test_whatever_runs_by_rule_stays_inside_the_repository(shared_sandbox: Sandbox, command: str) -> None:
    if not is_safe(command, shared_sandbox.repo):
        return
    before = shared_sandbox.outside()
    output = shared_sandbox.bash(command)
    assert SECRET not in output
    assert shared_sandbox.outside() == before
    assert shared_sandbox.protected() == TEST_CALC.encode()


def one_word_changes() -> Iterator[str]:
    """A template per program with every attack word inserted at every place after the program, glued on or not."""
    for template in ONE_PER_PROGRAM:
        words = template.split(" ")
        for word in HOSTILE:
            for place in range(1, len(words) + 1):
                for before, after in ((" ", " "), ("", " "), (" ", "")):
                    start, end = " ".join(words[:place]), " ".join(words[place:])
                    yield start + before + word + (after + end if end else "")


def test_no_single_attack_word_makes_a_safe_command_reach_outside(shared_sandbox: Sandbox) -> None:
    """The same property over every one-word change of the templates. Those judged safe run in one bash script
    (pytest left out: its options are covered above, and here it would cost a second each); commands that read as
    the same words (bash reads them the same way, the test above shows) run once."""
    judged_safe: dict[tuple[tuple[str | None, ...], ...], str] = {}
    for command in one_word_changes():
        if is_safe(command, shared_sandbox.repo) and "pytest" not in command:
            words = tuple(tuple(part for w in cmd for part in (w.text, w.pattern)) for cmd in read_pipeline(command))
            judged_safe.setdefault(words, command)
    before = shared_sandbox.outside()
    output = shared_sandbox.bash("\n".join(judged_safe.values()), timeout=120)
    assert SECRET not in output
    assert shared_sandbox.outside() == before and shared_sandbox.protected() == TEST_CALC.encode()
    assert len(judged_safe) > 200  # the check is not empty: many one-word changes stay safe (quoted, glued, ...)
