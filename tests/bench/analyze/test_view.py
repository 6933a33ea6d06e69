"""The results viewer: one self-contained HTML page, opened in a real headless Chromium (Debian's chromium driven by
chromium-driver through selenium): it loads with no console error and no request, a run's steps open, the numbers it
shows are the CSV's, and what a model or a tool wrote is shown as text, never run. The results are a bench's own,
made with the fakes (bench.testing.fakes), with a request log written for one run; tests/bench/analyze/
test_view_example.py opens the shipped real CPU example.

BENCH_VIEW_SCREENSHOTS=DIR keeps a screenshot of each page there (docs/viewer-matrix.png and docs/viewer-run.png
were made so)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import small_task

from bench import ROOT
from bench.analyze.view import view_data
from bench.analyze.view_page import render
from bench.cli import main
from bench.config import BenchConfig
from bench.fixtures.fixture import load_fixture
from bench.measure.request_log import REQUESTS_FILE
from bench.results.append import read_rows
from bench.run.runner import Bench
from bench.testing.fakes import FakeFactory, FakeSandboxes, FakeServers, ScriptedRun

pytestmark = pytest.mark.xdist_group("viewer")  # one worker makes the results its tests share

# The suite's small task (tests/small_task.py): its grading is one pytest; the page shows any task's the same way.
SOLUTION = load_fixture(small_task.NAME, small_task.ROOT).solution_dir
SOLVED = {path.name: path.read_text() for path in SOLUTION.glob("*.py")}
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
LONG_COMMAND = "python -m pytest -q test_todo.py && " + "echo checking the overdue listing again; " * 8


# What a model could write to take over a page that parsed it as markup: the page must show it as text.
INJECTION = '<img src=x onerror="document.title=\'pwned\'"></script><script>document.title="pwned"</script><!--<script>'
TOOL_OUTPUT = "<b>def add(title):</b> & &amp; </pre><iframe src=x></iframe>"


def response(step: int, prompt: int, request: int | None = None) -> dict[str, Any]:
    usage = {"prompt_tokens": prompt, "completion_tokens": 40, "total_tokens": prompt + 40}
    timings = {"cache_n": 0, "prompt_n": prompt, "prompt_ms": 50.0, "predicted_n": 40, "predicted_ms": 80.0}
    return {
        "t": step * 0.2,
        "event": "response",
        "step": step,
        "finish_reason": "tool_calls",
        "usage": usage,
        "timings": timings,
        "tool_calls": 1,
        "request": step - 1 if request is None else request,
    }


def call(name: str, arguments: dict[str, str], content: str = "") -> dict[str, Any]:
    function = {"name": name, "arguments": json.dumps(arguments)}
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [{"id": name, "type": "function", "function": function}],
    }


def request_log() -> list[dict[str, Any]]:
    """The busy run's request log: step 1's answer says INJECTION and reads todo.py (TOOL_OUTPUT), step 2's runs
    the long command; the threshold clearing replaces the read's result, the 400's clearing shortens step 2's."""
    first = [{"role": "system", "content": "You are Flint."}, {"role": "user", "content": "Add due dates."}]
    read = [
        call("read_file", {"path": "todo.py"}, INJECTION),
        {"role": "tool", "tool_call_id": "read_file", "content": TOOL_OUTPUT},
    ]
    ran = [call("run", {"command": LONG_COMMAND}), {"role": "tool", "tool_call_id": "run", "content": "9 passed"}]
    cleared = {"role": "tool", "tool_call_id": "read_file", "content": "[cleared: 5120 characters; call again]"}
    shorter = {"role": "tool", "tool_call_id": "run", "content": "[cleared: 8 characters; call again]"}
    note = {"role": "user", "content": "Your answer was cut off at the 4096-token window."}
    return [
        {"request": 0, "step": 1, "from": 0, "messages": first, "body": {"tools": [], "stream": False}},
        {"request": 1, "step": 2, "from": 2, "messages": read},
        {"request": 2, "step": 3, "from": 3, "messages": [cleared, *ran]},
        {"request": 3, "step": 3, "from": 5, "messages": [shorter]},
        {"request": 4, "step": 4, "from": 6, "messages": [note]},
    ]


def busy_trace(n_ctx: int) -> list[dict[str, Any]]:
    """A run with a bit of everything: calls, a long command, Jeff, a clearing, a cut answer, a 400, a done check."""
    return [
        {"t": 0.0, "event": "start", "n_ctx": n_ctx, "preset": "part3"},
        response(1, 900),
        {
            "t": 0.3,
            "event": "tool",
            "step": 1,
            "name": "read_file",
            "args": {"path": "todo.py"},
            "ok": True,
            "result_chars": 5120,
            "truncated": False,
            "refused": False,
            "error": None,
            "seconds": 0.01,
        },
        response(2, 2600),
        {
            "t": 0.5,
            "event": "jeff",
            "step": 2,
            "command": LONG_COMMAND,
            "opinion": "Fine: it only runs the tests.",
            "seconds": 0.4,
            "usage": None,
            "timings": None,
            "error": None,
        },
        {"t": 0.6, "event": "approval", "step": 2, "command": LONG_COMMAND, "decision": "run", "by": "jeff"},
        {
            "t": 0.7,
            "event": "tool",
            "step": 2,
            "name": "run",
            "args": {"command": LONG_COMMAND},
            "ok": True,
            "result_chars": 311,
            "truncated": False,
            "refused": False,
            "error": None,
            "seconds": 1.2,
        },
        {"t": 0.8, "event": "clear", "step": 2, "reason": "threshold", "total_tokens": 2640, "changed": 3},
        {
            "t": 0.9,
            "event": "http_error",
            "step": 3,
            "status": 400,
            "type": "exceed_context_size_error",
            "message": "request (4200 tokens) exceeds the available context size (4096 tokens)",
            "messages": 9,
            "n_prompt_tokens": 4200,
            "n_ctx": n_ctx,
            "request": 2,
        },
        {"t": 1.0, "event": "clear", "step": 3, "reason": "context_400", "total_tokens": None, "changed": 1},
        response(3, 1800, request=3),
        {"t": 1.1, "event": "cut", "step": 3, "kind": "unparsed", "dropped": True, "message": "Failed to parse"},
        response(4, 2000, request=4),
        {
            "t": 1.3,
            "event": "done_check",
            "step": 4,
            "passed": True,
            "pytest_exit": 0,
            "summary": "9 passed",
            "missing": [],
            "planted": [],
            "new_tests": None,
            "seconds": 0.9,
        },
        {"t": 1.4, "event": "stop", "reason": "done", "steps": 4, "message": None},
    ]


def bench_file(folder: Path, runs: list[ScriptedRun]) -> Path:
    out = folder / "results.csv"
    config = BenchConfig(use_jeff=False, presets=["part3"], out=str(out), reps=len(runs), **small_task.SETTINGS)
    servers = FakeServers()
    Bench(config, FakeFactory(config, servers, FakeSandboxes(servers, runs), checkout=ROOT), checkout=ROOT).run()
    return out


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory, child_processes: None) -> tuple[Path, Path]:
    """Two results files of the same configuration: an older one that did nothing, a newer one that solved it."""
    with pytest.MonkeyPatch.context() as patch:  # the benches' state files in a folder of the module's own
        patch.setenv("AGENTBENCH_STATE_DIR", str(tmp_path_factory.mktemp("instances")))
        old = bench_file(tmp_path_factory.mktemp("old"), [ScriptedRun(steps=2)])
        new = bench_file(
            tmp_path_factory.mktemp("new"),
            [ScriptedRun(files=SOLVED, events=busy_trace(4096)), ScriptedRun(files=SOLVED, steps=2)],
        )
    busy = next(row["run_id"] for row in read_rows(new) if row["steps"] == "4")
    log = new.parent / "runs" / busy / REQUESTS_FILE
    log.write_text("".join(json.dumps(line) + "\n" for line in request_log()), encoding="utf-8")
    return old, new


def test_the_page_is_self_contained_and_escapes_what_the_trace_holds(results: tuple[Path, Path]) -> None:
    data = view_data([str(p) for p in results])
    data["runs"] = list(data["runs"])  # each run's page made now (bench.analyze.view.RunPages), to be changed here
    data["runs"][0]["error"] = "</script><script>alert(1)</script>"
    page = render(data)
    assert "</script><script>alert" not in page and "\\u003c/script>\\u003cscript>alert(1)\\u003c/script>" in page
    payloads, markup = json_elements(page)
    assert len(payloads) == 1 + len(data["runs"])  # the matrix's, and one a run for its steps, tests and diff
    assert not any("<" in payload for payload in payloads.values())
    assert json.dumps(INJECTION)[1:-1].replace("<", "\\u003c") in "".join(payloads.values())
    assert "http://" not in markup and "https://" not in markup and "src=" not in markup  # nothing to fetch
    assert markup.count("<script") == 1 and "script-src 'sha256-" in markup  # only the page's own script runs


def json_elements(page: str) -> tuple[dict[str, str], str]:
    """The page's JSON script elements by id, and the markup around them: each element ends at its first end tag,
    since none is inside it."""
    payloads, markup, rest = {}, "", page
    while '<script type="application/json" id=' in rest:
        before, rest = rest.split('<script type="application/json" id=', 1)
        name, rest = rest.split(">", 1)
        payloads[name], rest = rest.split("</script>", 1)
        markup += before
    return payloads, markup + rest


def test_the_page_holds_every_runs_data_the_matrix_first_and_each_runs_steps_apart(
    results: tuple[Path, Path],
) -> None:
    """The page's data is view_data's, whole: the matrix's element has each run's cells and names, and each run's own
    element (`run-<part>`) its system prompt, task, steps, tests and diff, read when the run is opened or searched."""
    data = view_data([str(p) for p in results])
    runs = list(data["runs"])
    payloads, _ = json_elements(render(data))
    matrix = json.loads(payloads["data"])
    as_json = json.loads(json.dumps({**data, "runs": runs}))  # tuples as the page's lists
    assert {key: value for key, value in matrix.items() if key != "runs"} == {
        key: value for key, value in as_json.items() if key != "runs"
    }
    assert all("steps" not in run and "diff" not in run for run in matrix["runs"])
    whole = [run | json.loads(payloads[f"run-{run.pop('part')}"]) for run in matrix["runs"]]
    assert whole == as_json["runs"] and any(run["steps"] for run in runs)


def test_the_steps_come_from_the_trace(results: tuple[Path, Path]) -> None:
    data = view_data([str(results[1])])
    busy = next(run for run in data["runs"] if len(run["steps"]) == 4)
    kinds = [[item["kind"] for item in step["items"]] for step in busy["steps"]]
    # Jeff's opinion sits beside the command it was about, not as an item of its own
    assert kinds == [["tool"], ["approval", "tool", "clear"], ["http_error", "clear", "cut"], ["done_check"]]
    assert busy["steps"][1]["items"][1]["jeff"] == "Fine: it only runs the tests."
    assert busy["steps"][1]["fill"] == round(100 * 2640 / 4096, 1)
    assert busy["steps"][1]["items"][1]["folded"] is True and busy["steps"][0]["items"][0]["folded"] is False
    assert "3 messages cleared at 2640 tokens" in busy["steps"][1]["items"][2]["summary"]
    assert all(test["outcome"] == "passed" for test in busy["tests"]) and len(busy["tests"]) == 3 + 1  # hidden, visible
    # the texts from the request log: each answer's message and its calls' results, where they happened
    first, second, third, last = busy["steps"]
    assert first["message"]["content"] == INJECTION and first["message"]["tool_calls"][0]["name"] == "read_file"
    assert first["items"][0]["result"] == TOOL_OUTPUT and second["items"][1]["result"] == "9 passed"
    (threshold,) = second["items"][2]["cleared"]
    assert (threshold["message"], threshold["what"]) == (3, "tool") and threshold["now"].startswith("[cleared: 5120")
    assert [c["message"] for c in third["items"][1]["cleared"]] == [5]  # the 400's clearing, between its requests
    assert third["message"] is None and "a cut answer dropped" in third["message_note"]
    assert last["message"] is None and "no request followed it" in last["message_note"]


@pytest.fixture
def browser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    monkeypatch.setenv("SE_OFFLINE", "true")  # selenium's driver manager never looks anything up
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "chromium"
    for flag in [*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1400,1000"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "chromedriver"), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def severe(driver: Any) -> list[str]:
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


@pytest.mark.browser
def test_in_chromium_the_matrix_loads_a_run_opens_and_nothing_a_model_wrote_runs(
    results: tuple[Path, Path], tmp_path: Path, browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    page = tmp_path / "report.html"
    assert main(["view", str(results[0]), str(results[1]), "--out", str(page)]) == 0
    browser.get(page.as_uri())
    assert severe(browser) == []  # a script the policy blocked would be a console error
    assert browser.title.startswith("Results:")
    matrix = browser.find_element(By.CSS_SELECTOR, "table.matrix")
    headings = [th.text for th in matrix.find_elements(By.TAG_NAME, "th")]
    lines = [
        [td.text for td in tr.find_elements(By.TAG_NAME, "td")]
        for tr in matrix.find_elements(By.CSS_SELECTOR, "tbody tr")
    ]
    assert [line[0] for line in lines] == [f"{p.parent.name}/{p.name}" for p in results]
    for line, csv in zip(lines, results, strict=True):  # per file: its runs and their hidden tests, from the CSV
        shown = dict(zip(headings, line, strict=True))
        csv_rows = read_rows(csv)
        assert shown["runs"] == str(len(csv_rows))
        assert shown["hidden passed"] == ", ".join(row["hidden_passed"] for row in csv_rows)
    assert "peak_gpu_mib_flint" in browser.find_element(By.ID, "unmeasured").text  # not a column of blanks
    verdicts = browser.find_element(By.XPATH, "//th[text()='verdict']/ancestor::table")
    assert "completed" in verdicts.text
    shots = os.environ.get("BENCH_VIEW_SCREENSHOTS")
    if shots:
        browser.save_screenshot(str(Path(shots) / "viewer-matrix.png"))

    # the search reads every text of the page, the model's messages too: only the busy run says "pwned"
    browser.find_element(By.ID, "search").send_keys("pwned")
    assert browser.find_element(By.ID, "search-count").text == "1 of 3 runs shown"
    rows = {row["run_id"]: row for row in read_rows(results[1])}
    busy = next(run_id for run_id, row in rows.items() if row["steps"] == "4")
    visible = [
        a.get_attribute("data-run") for a in browser.find_elements(By.CSS_SELECTOR, "a[data-run]") if a.is_displayed()
    ]
    assert visible == [busy]
    browser.find_element(By.CSS_SELECTOR, "details.group > summary").click()  # a group folds
    assert not browser.find_element(By.CSS_SELECTOR, "table.matrix").is_displayed()
    browser.find_element(By.CSS_SELECTOR, "details.group > summary").click()

    browser.find_element(By.CSS_SELECTOR, f"a[data-run='{busy}']").click()
    cells = browser.find_element(By.ID, "run-cells")
    headers = [th.text for th in cells.find_elements(By.TAG_NAME, "th")]
    values = [td.text for td in cells.find_elements(By.TAG_NAME, "td")]
    from bench.analyze.view import RUN_CELLS

    assert headers == [heading for _, heading in RUN_CELLS]
    assert values == [rows[busy][column] for column, _ in RUN_CELLS]  # the CSV's own cells
    browser.find_element(By.ID, "search").clear()  # the run page's search starts from the matrix's query
    browser.execute_script("document.getElementById('search').dispatchEvent(new Event('input'))")
    steps = browser.find_elements(By.CSS_SELECTOR, "#steps .step")
    assert len(steps) == 4 and "window 64.5% of 4096" in steps[1].text
    # the model's text and the tool's output are text on the page: no element of theirs, nothing they say ran
    message = steps[0].find_element(By.CSS_SELECTOR, ".message pre.text")
    assert message.get_attribute("textContent") == INJECTION
    assert steps[0].find_element(By.CSS_SELECTOR, ".result pre").get_attribute("textContent") == TOOL_OUTPUT
    assert browser.find_elements(By.CSS_SELECTOR, "#root img, #root iframe, #root script") == []
    assert browser.title.startswith("Results:") and "pwned" not in browser.title
    assert "Jeff: Fine: it only runs the tests." in steps[1].find_element(By.CSS_SELECTOR, ".jeff").text
    assert "clearing (threshold): 3 messages cleared" in steps[1].text
    assert "[cleared: 5120 characters; call again]" in steps[1].find_element(By.CSS_SELECTOR, "[data-kind=clear]").text
    assert "HTTP 400" in steps[2].text and "cut answer (unparsed), dropped" in steps[2].text
    assert "no request followed it" in steps[3].text
    folded = steps[1].find_elements(By.CSS_SELECTOR, "[data-kind=tool] details")[0]  # the run call's long command
    assert not folded.find_element(By.TAG_NAME, "pre").is_displayed()
    folded.find_element(By.TAG_NAME, "summary").click()
    assert "echo checking" in folded.find_element(By.TAG_NAME, "pre").text
    hidden = browser.find_element(By.ID, "hidden")
    assert hidden.text.count(" passed") == int(rows[busy]["hidden_passed"]) + int(rows[busy]["visible_passed"])
    assert (
        f"hidden tests passed: {rows[busy]['hidden_passed']} of {rows[busy]['hidden_total']}"
        in browser.find_element(By.ID, "hidden-count").text
    )
    assert small_task.CODE in browser.find_element(By.ID, "diff").get_attribute("textContent")
    assert severe(browser) == []
    if shots:
        browser.save_screenshot(str(Path(shots) / "viewer-run.png"))
    browser.find_element(By.ID, "back").click()
    assert browser.find_elements(By.CSS_SELECTOR, "table.matrix")


def test_a_run_without_its_trace_keeps_its_row_and_says_why(results: tuple[Path, Path], tmp_path: Path) -> None:
    lone = tmp_path / "lone.csv"
    shutil.copy(results[0], lone)  # no runs/ folder beside it
    (run,) = view_data([str(lone)])["runs"]
    assert run["steps"] == [] and run["tests"] == [] and run["note"].startswith("no event trace")
    assert run["cells"]["hidden_passed"] == read_rows(lone)[0]["hidden_passed"]
