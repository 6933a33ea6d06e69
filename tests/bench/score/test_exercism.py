"""Exercism exercises (written here, in exercism's layout: tests/bench/score/data/exercism) imported as fixtures
under a root outside the checkout, checked there by `fixtures check`, graded by `bench score --fixture --repo`, and
run by the bench itself with the fakes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from bench import ROOT
from bench.cli import main
from bench.config import BenchConfig, Choice
from bench.errors import FixtureError, PrerequisiteError
from bench.fixtures.fixture import fixture_hash, load_fixture
from bench.provenance import git_dirty
from bench.results.append import read_rows
from bench.run.runner import Bench
from bench.score.check import check_fixture
from bench.score.exercise import read_exercise
from bench.score.exercism import command as import_command
from bench.score.exercism import import_all, visible_share
from bench.score.graders import LocalGrader
from bench.testing.fake_llama import FakeLlama
from bench.testing.fakes import FakeFactory, FakeSandboxes, FakeServers, ScriptedRun

# One group: the imported root (each exercise graded on its stub and its example) is made once, on one pytest-xdist
# worker (a session fixture is made once per worker).
pytestmark = pytest.mark.xdist_group("exercism")
EXERCISES = Path(__file__).parent / "data" / "exercism"
IMPORTABLE = {"bike-rental", "grade-bands", "order-totals", "tally-counter", "traffic-light", "word-stats"}
# What each exercise's tests give, run by plain pytest on the stub and the example: the counts imported must match.
COUNTS = {
    "bike_rental": (6, 1),
    "grade_bands": (4, 0),
    "order_totals": (4, 0),
    "tally_counter": (7, 0),
    "traffic_light": (3, 0),  # its stub lacks the names its tests import: they do not collect on it
    "word_stats": (6, 1),
}


@pytest.fixture(scope="session")
def root(tmp_path_factory: pytest.TempPathFactory, child_processes: None) -> Path:
    """Every test exercise imported into a fixtures root of its own (the refused ones noted in refused.json); read
    only (a test that changes it copies it first). Session-scoped: xdist may run this module's tests among others',
    and a module-scoped root was imported again each time the worker came back to the module."""
    into = tmp_path_factory.mktemp("exercism-root")
    (into / "fixtures").mkdir()
    imported, refused = import_all([EXERCISES], into, 0.0, 20, force=False, grader=LocalGrader())
    (into / "refused.json").write_text(json.dumps(refused))
    assert sorted(i.name for i in imported) == sorted(COUNTS)
    return into


def pytest_score(folder: Path, test_file: str) -> tuple[int, int]:
    """Passed and total test functions by a plain pytest run in `folder` (the exercise as exercism ships it); a
    test with a failing subtest failed (pytest 9 reports it as one case holding each subtest's failure)."""
    report = folder / "report.xml"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}", test_file]
    subprocess.run(command, cwd=folder, capture_output=True, timeout=120)
    outcomes: dict[tuple[str | None, str | None], bool] = {}
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        key = (case.get("classname"), case.get("name"))
        failed = any(child.tag in ("failure", "error", "skipped") for child in case)
        outcomes[key] = outcomes.get(key, True) and not failed
    return sum(outcomes.values()), len(outcomes)


def test_each_exercise_becomes_a_fixture_with_counts_measured(root: Path) -> None:
    for name, (total, stub_passing) in COUNTS.items():
        fx = load_fixture(name, root)
        assert (fx.hidden_total, fx.expected_hidden_passing) == (total, stub_passing), name
        assert fx.visible_tests == [] and fx.solution_adds_tests is False and fx.grading == "library"
        task = (fx.path / "TASK.md").read_text()
        assert f"`{name}.py`" in task and "hidden" in task
    tally = (root / "fixtures/tally_counter/TASK.md").read_text()
    assert "times must be positive" in tally  # instructions.append.md is part of the task


def test_helpers_and_editor_files_reach_grading_and_are_protected(root: Path) -> None:
    fx = load_fixture("order_totals", root)
    assert fx.support_files == ["price_list.py", "sample_orders.py"]
    assert (fx.path / "price_list.py").is_file() and not (fx.path / "sample_orders.py").exists()
    assert fx.protected_files == ["price_list.py"]  # the editor file the agent receives is read-only
    assert sorted(p.name for p in fx.solution_dir.iterdir()) == ["order_totals.py"]


def test_exercises_it_cannot_take_are_listed_with_the_reason(root: Path) -> None:
    refused = json.loads((root / "refused.json").read_text())
    assert set(refused) == {"no-example", "shout-rb"}
    assert "missing .meta/example.py" in refused["no-example"]
    assert "not a Python exercise" in refused["shout-rb"] and "shout.rb" in refused["shout-rb"]
    assert not (root / "fixtures/no_example").exists()  # nothing half-made is left


def test_fixtures_check_from_the_outside_root_passes_every_import(root: Path) -> None:
    for name in COUNTS:
        checked = check_fixture(name, root, window=4096, checkout=ROOT)
        problems, summary = checked.problems, checked.summary
        assert problems == [], (name, summary)
        assert "estimated" in summary


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_bench_score_gives_the_example_n_of_n_and_the_stub_its_true_pytest_score(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    total, stub_passing = COUNTS[name]
    slug = name.replace("_", "-")
    stub, solved = tmp_path / f"{name}-stub", tmp_path / f"{name}-solved"
    shutil.copytree(root / "fixtures" / name, stub, ignore=shutil.ignore_patterns("fixture.yaml"))
    shutil.copytree(stub, solved)
    shutil.copy(EXERCISES / slug / ".meta/example.py", solved / f"{name}.py")
    plain = tmp_path / f"{name}-plain"
    shutil.copytree(EXERCISES / slug, plain)
    # The stub's true score; where its tests do not collect, plain pytest reports the file's one error.
    plain_total = 1 if name == "traffic_light" else total
    assert pytest_score(plain, f"{name}_test.py") == (stub_passing, plain_total)
    for folder, expected in ((solved, total), (stub, stub_passing)):
        argv = ["score", "--fixture", name, "--repo", str(folder), "--fixtures-root", str(root), "--json"]
        assert main([*argv, "--sandbox", "local", "--out", str(tmp_path / f"{folder.name}-score")]) == 0
        answer = json.loads(capsys.readouterr().out)
        assert (answer["hidden_passed"], answer["hidden_total"], answer["tampered"]) == (expected, total, False)
        assert Path(answer["junit"][0]).is_file()


@pytest.mark.usefixtures("child_processes")
def test_visible_share_gives_the_agent_some_tests_read_only(tmp_path: Path) -> None:
    into = tmp_path / "root"
    (imported,), refused = import_all([EXERCISES / "tally-counter"], into, 0.5, 20, force=False, grader=LocalGrader())
    assert not refused
    fx = load_fixture("tally_counter", into)
    assert fx.visible_tests == ["tally_counter_visible_test.py"] and fx.expected_visible_passing == 0
    assert fx.hidden_total == 7 and imported.visible_total == 4
    assert check_fixture("tally_counter", into, checkout=ROOT).problems == []
    _, refused = import_all([EXERCISES / "tally-counter"], into, 0.5, 20, force=False, grader=LocalGrader())
    assert "already exists (--force replaces it)" in refused["tally-counter"]


def test_visible_share_keeps_every_kth_test_and_drops_emptied_classes() -> None:
    text = (EXERCISES / "word-stats/word_stats_test.py").read_text()
    kept = visible_share(text, 0.34)
    assert kept is not None and kept.count("def test_") == 3
    assert "class WordsTest" in kept and "class UniqueWordsTest" not in kept
    compile(kept, "kept", "exec")
    assert visible_share(text, 0.0) is None


def test_a_task_too_long_for_the_window_is_an_error_naming_the_window(root: Path, tmp_path: Path) -> None:
    into = tmp_path / "root"
    shutil.copytree(root, into)
    (into / "fixtures/word_stats/TASK.md").write_text("Count the words. " * 2000)  # about 8,500 tokens
    checked = check_fixture("word_stats", into, window=4096, checkout=ROOT)
    problems = checked.problems
    assert len(problems) == 1 and "cannot fit the smallest configured window (4096 tokens)" in problems[0]
    assert "estimated" in problems[0] and "--ctx 9216" in problems[0]
    with FakeLlama([]) as fake:  # a server up: its own tokenizer counts (here, one token per 4 characters)
        checked = check_fixture("word_stats", into, window=4096, tokenizer_url=fake.url, checkout=ROOT)
        problems = checked.problems
        assert ("POST", "/apply-template") in fake.hits and ("POST", "/tokenize") in fake.hits
    assert f"measured by {fake.url}'s tokenizer" in problems[0]


def test_a_bench_on_the_outside_root_records_it_and_the_fixtures_hash(root: Path, tmp_path: Path) -> None:
    dirty = git_dirty(ROOT)
    example = (EXERCISES / "tally-counter/.meta/example.py").read_text()
    settings = {"use_jeff": False, "out": str(tmp_path / "results.csv"), "fixtures": ["tally_counter"]}
    config = BenchConfig(**settings, fixtures_root=str(root))  # type: ignore[arg-type]
    servers = FakeServers()
    (row,) = Bench(
        config,
        FakeFactory(
            config, servers, FakeSandboxes(servers, [ScriptedRun(files={"tally_counter.py": example})]), checkout=ROOT
        ),
        checkout=ROOT,
    ).run()
    assert (row["hidden_passed"], row["hidden_total"]) == ("7", "7")
    assert row["fixtures_root"] == str(root) and row["fixture_sha"] == fixture_hash(load_fixture("tally_counter", root))
    assert read_rows(tmp_path / "results.csv") == [row]
    assert git_dirty(ROOT) == dirty  # the outside root changes nothing in the checkout


def test_fixtures_root_flag_and_setting_reach_check_and_refuse_a_wrong_folder(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["fixtures", "check", "grade_bands", "--fixtures-root", str(root)]) == 0
    assert "grade_bands: ok" in capsys.readouterr().out
    config = tmp_path / "bench.yaml"
    config.write_text(yaml.safe_dump({"fixtures_root": str(tmp_path / "nowhere")}))
    assert main(["fixtures", "check", "--config", str(config)]) == 2
    assert "no fixtures/ folder" in capsys.readouterr().err


@pytest.mark.llama
def test_the_real_llama_servers_tokenizer_measures_the_task(root: Path, tmp_path: Path) -> None:
    from bench.fixtures.window import estimated_tokens, first_request, measured_tokens
    from bench.llama.binaries import find_small_model
    from bench.llama.process import LlamaProcess

    server = LlamaProcess(find_small_model(), 512, tmp_path / "llama.log", threads=1)
    server.start()
    try:
        fx = load_fixture("tally_counter", root)
        task = (fx.path / fx.task_file).read_text()
        tokens = measured_tokens(server.url, first_request(task))
        alone = httpx.post(f"{server.url}/tokenize", json={"content": task}, timeout=30).json()["tokens"]
        assert len(alone) < tokens < estimated_tokens(first_request(task))  # its template holds the task and more
        checked = check_fixture("tally_counter", root, window=256, tokenizer_url=server.url, checkout=ROOT)
        problems = checked.problems
    finally:
        server.stop()
    assert len(problems) == 1 and f"{tokens} tokens (measured by {server.url}'s tokenizer)" in problems[0]


@pytest.mark.docker
def test_the_docker_grader_gets_the_support_files_too(root: Path, tmp_path: Path) -> None:
    """sample_orders.py lies only beside the hidden tests: it reaches the locked-down container with them."""
    from bench.score.graders import make_grader
    from bench.score.score_command import score_folder

    solved = tmp_path / "solved"
    shutil.copytree(root / "fixtures/order_totals", solved, ignore=shutil.ignore_patterns("fixture.yaml"))
    shutil.copy(EXERCISES / "order-totals/.meta/example.py", solved / "order_totals.py")
    score, junit = score_folder("order_totals", solved, make_grader("docker", ROOT), root, tmp_path / "score")
    assert (score.hidden_passed, score.hidden_total, score.error, score.grading_tampered) == (4, 4, None, False)
    assert junit and junit[0].is_file()


def copied_exercise(tmp_path: Path, slug: str, config: dict[str, Any]) -> Path:
    """An exercise of the test data copied under tmp_path/src, with its config's files table replaced."""
    folder = tmp_path / "src" / slug
    shutil.copytree(EXERCISES / slug, folder)
    meta = json.loads((folder / ".meta/config.json").read_text())
    meta["files"].update(config)
    (folder / ".meta/config.json").write_text(json.dumps(meta))
    return folder


@pytest.mark.parametrize("where", ["../secrets.py", "/etc/hostname", "linked.py"])
def test_config_paths_that_leave_the_exercise_are_refused(tmp_path: Path, where: str) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "secrets.py").write_text("TOKEN = 'not yours'\n")
    folder = copied_exercise(tmp_path, "grade-bands", {"editor": [where]})
    (folder / "linked.py").symlink_to(tmp_path / "src" / "secrets.py")

    imported, refused = import_all([folder], tmp_path / "root", 0.0, 20, force=False, grader=LocalGrader())

    assert imported == [] and f"names {where}, outside the exercise" in refused["grade-bands"]
    assert not (tmp_path / "root/hidden_tests/grade_bands").exists()


@pytest.mark.usefixtures("child_processes")
def test_the_import_grades_on_this_machine_only_when_asked_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = ["fixtures", "import", "exercism", str(EXERCISES / "grade-bands"), "--into", str(tmp_path / "root")]
    assert main([*argv, "--sandbox", "local"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("grading the stubs and examples on this machine (--sandbox local)")
    assert "grade_bands: imported" in out
    monkeypatch.setattr("bench.sandbox.kinds.choose_sandbox", lambda *_: Choice("local", "no engine answers"))
    with pytest.raises(PrerequisiteError, match="give --sandbox local to run their code on this machine"):
        import_command([EXERCISES / "grade-bands"], tmp_path / "auto/root", checkout=ROOT)
    assert not (tmp_path / "auto/root/fixtures/grade_bands").exists()


@pytest.mark.docker
def test_the_import_grades_in_docker_when_an_engine_answers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert import_command([EXERCISES / "grade-bands"], tmp_path / "root", checkout=ROOT) == 0
    out = capsys.readouterr().out
    assert out.startswith("grading the stubs and examples in docker (a Docker engine answers)")
    fx = load_fixture("grade_bands", tmp_path / "root")
    assert (fx.hidden_total, fx.expected_hidden_passing) == COUNTS["grade_bands"]


def test_a_config_naming_the_example_as_an_editor_file_is_refused(tmp_path: Path) -> None:
    folder = copied_exercise(tmp_path, "grade-bands", {"editor": [".meta/example.py"]})

    imported, refused = import_all([folder], tmp_path / "root", 0.0, 20, force=False, grader=LocalGrader())

    assert imported == [] and "names .meta/example.py as an editor file" in refused["grade-bands"]


def test_a_docs_file_linking_out_of_the_exercise_is_refused(tmp_path: Path) -> None:
    (tmp_path / "secret.md").write_text("not for the agent\n")
    folder = copied_exercise(tmp_path, "grade-bands", {})
    (folder / ".docs" / "introduction.md").symlink_to(tmp_path / "secret.md")

    imported, refused = import_all([folder], tmp_path / "root", 0.0, 20, force=False, grader=LocalGrader())

    assert imported == [] and refused["grade-bands"] == ".docs/introduction.md leads outside the exercise"


@pytest.mark.usefixtures("child_processes")
def test_an_example_failing_tests_is_refused_in_one_short_line(tmp_path: Path) -> None:
    folder = copied_exercise(tmp_path, "grade-bands", {})
    (folder / ".meta/example.py").write_text("def band(score):\n    return 'A'\n")

    imported, refused = import_all([folder], tmp_path / "root", 0.0, 20, force=False, grader=LocalGrader())

    assert imported == [] and refused["grade-bands"].startswith("the example passes 1 of its 4 tests (first failing: ")
    assert "\n" not in refused["grade-bands"] and len(refused["grade-bands"]) < 200


class EngineGone:
    """A docker grader whose engine went away (its socket removed mid-import): the SDK's error, as measured on a
    restart of the engine under an import of Aider's polyglot benchmark."""

    def run_sessions(self, *_: Any) -> Any:
        import requests.exceptions

        raise requests.exceptions.ConnectionError("Connection aborted.", FileNotFoundError(2, "No such file"))


@pytest.mark.usefixtures("child_processes")
def test_an_engine_that_fails_mid_import_refuses_no_exercise_for_it(tmp_path: Path) -> None:
    """The exercise being graded is not graded, and those after it are not tried, each saying why and what to do;
    before, each was refused with the SDK's text, as if the exercise were at fault, and the import went on."""
    sources = [EXERCISES / "grade-bands", EXERCISES / "order-totals"]

    imported, refused = import_all(sources, tmp_path / "root", 0.0, 20, force=False, grader=EngineGone())

    assert imported == [] and sorted(refused) == ["grade-bands", "order-totals"]
    assert refused["grade-bands"].startswith("not graded: the container engine failed (")
    assert refused["order-totals"].startswith("not tried: the container engine failed (")
    assert all(why.endswith("import it again once it answers") for why in refused.values())
    assert not (tmp_path / "root/fixtures/grade_bands").exists()


def java_exercise(tmp_path: Path, examples: list[str], editor: list[str]) -> Path:
    """A Java exercise in exercism's layout whose reference solution has `examples` (names in the reference folder)."""
    folder = tmp_path / "bowling"
    files = {".docs/instructions.md": "Score a game.\n", "src/main/java/Game.java": "class Game {}\n"}
    files.update({"src/test/java/GameTest.java": "class GameTest {}\n"})
    files.update({f".meta/src/reference/java/{name}": f"class {name[:-5]} {{}}\n" for name in examples})
    files.update({f"src/main/java/{name}": f"class {name[:-5]} {{}}\n" for name in editor})
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    config = {
        "solution": ["src/main/java/Game.java"],
        "test": ["src/test/java/GameTest.java"],
        "example": [f".meta/src/reference/java/{name}" for name in examples],
        "editor": [f"src/main/java/{name}" for name in editor],
    }
    (folder / ".meta/config.json").write_text(json.dumps({"files": config}))
    return folder


def test_a_reference_solution_of_more_files_adds_them_beside_the_solution_but_not_over_an_editor_file(
    tmp_path: Path,
) -> None:
    """Java's reference solutions add classes of their own (Aider's polyglot bowling, poker, connect): each goes
    beside the solution file, by name, where the solution's copy is laid over the stub; an editor file of the same
    name is grading's, not the reference's."""
    folder = java_exercise(tmp_path, ["Frame.java", "Game.java", "Winner.java"], editor=["Winner.java"])

    examples = read_exercise(folder).examples

    assert examples == {
        "src/main/java/Game.java": ".meta/src/reference/java/Game.java",
        "src/main/java/Frame.java": ".meta/src/reference/java/Frame.java",
    }


def test_examples_named_unlike_the_solution_pair_in_order_or_not_at_all(tmp_path: Path) -> None:
    folder = java_exercise(tmp_path, ["Reference.java"], editor=[])
    assert read_exercise(folder).examples == {"src/main/java/Game.java": ".meta/src/reference/java/Reference.java"}
    folder = java_exercise(tmp_path / "two", ["Reference.java", "Frame.java"], editor=[])
    with pytest.raises(FixtureError, match="2 example files for 1 solution files: cannot pair them"):
        read_exercise(folder)
