"""The viewer on the shipped example of a real CPU bench (results/example/: the embedded llama-server, SmolLM2-135M
forced to call tools, part3 and late), in the real headless Chromium: each step shows the model's calls and each
tool's result exactly as the run's request log holds them, the runs tables sort and filter, the search finds a run by
what a tool returned. One page, loaded once for the module."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.cli import main
from bench.measure.request_log import load_request_log
from bench.measure.trace import load_trace
from bench.results.append import read_rows

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("viewer")]

EXAMPLE = Path(__file__).resolve().parents[3] / "results" / "example" / "cpu-presets.csv"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1400,1000",
]


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The example's page, open in Chromium."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    folder = tmp_path_factory.mktemp("view")
    out = folder / "example.html"
    assert main(["view", str(EXAMPLE), "--out", str(out)]) == 0
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SE_OFFLINE", "true")  # selenium's driver manager never looks anything up
        options = webdriver.ChromeOptions()
        options.binary_location = shutil.which("chromium") or "chromium"
        for flag in [*FLAGS, f"--user-data-dir={folder / 'profile'}"]:
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "chromedriver"), options=options)
    try:
        driver.get(out.as_uri())
        yield driver
    finally:
        driver.quit()


Step = tuple[str | None, list[tuple[str, str]], list[str]]
TEXT = ":scope > pre.text, :scope > details.fold > pre.text"  # the message's own text, not its calls' arguments


def expected_steps(run_id: str) -> dict[int, Step]:
    """Per answered step that a request followed: the model's text (None: not sent back), its calls (name, arguments)
    and the tools' results, read straight from the request log: what request r + 1 added after request r's messages."""
    run_dir = EXAMPLE.parent / "runs" / run_id
    bodies = load_request_log(run_dir)
    assert bodies is not None
    found = {}
    for event in load_trace(run_dir / "events.jsonl"):
        request = event.get("request")
        if event.get("event") != "response" or bodies.get(request + 1) is None:
            continue
        added = bodies.bodies[request + 1]["messages"][len(bodies.bodies[request]["messages"]) :]
        calls = [
            (c["function"]["name"], c["function"]["arguments"])
            for m in added
            if m["role"] == "assistant"
            for c in m.get("tool_calls") or []
        ]
        answers = [m.get("content") or "" for m in added if m["role"] == "assistant"]
        text = "".join(answers) if answers else None  # None: the answer was not sent back (a cut answer dropped)
        found[event["step"]] = (text, calls, [m["content"] for m in added if m["role"] == "tool"])
    return found


# Each step as the page shows it, read in one script per run (a WebDriver call per element cost seconds): its number,
# the message's own text, the message's visible text, its calls (name, arguments) and the tools' results.
SHOWN_STEPS = f"""return [...document.querySelectorAll("#steps .step")].map((step) => {{
  const message = step.querySelector(".message");
  return [Number(step.dataset.step), message && [...message.querySelectorAll("{TEXT}")].map((p) => p.textContent),
          message && message.innerText, [...step.querySelectorAll(".message .call")].map((c) =>
            [c.querySelector("b").innerText.trim(), c.querySelector("pre").textContent]),
          [...step.querySelectorAll(".result pre")].map((p) => p.textContent)];
}});"""


def test_each_steps_calls_and_results_are_the_request_logs(page: Any) -> None:
    from selenium.webdriver.common.by import By

    for row in read_rows(EXAMPLE):
        page.execute_script(f"location.hash = 'run={row['run_id']}'")
        steps = {number: shown for number, *shown in page.execute_script(SHOWN_STEPS)}
        expected = expected_steps(row["run_id"])
        assert expected and set(expected) <= set(steps)
        for number, (text, calls, results) in expected.items():
            shown_text, message, shown_calls, shown = steps[number]
            # the small model forced to call tools writes no text: the page says so rather than showing none
            assert shown_text == ([text] if text else []), f"{row['run_id']} step {number}"
            note = "not sent back" if text is None else "no text: the answer is its calls"
            assert text or note in message, f"{row['run_id']} step {number}"
            assert ([tuple(c) for c in shown_calls], shown) == (calls, results), f"{row['run_id']} step {number}"
        tests = page.find_element(By.ID, "hidden")
        assert tests.text.count("passed") >= int(row["hidden_passed"])
    assert [entry for entry in page.get_log("browser") if entry["level"] == "SEVERE"] == []


def test_the_runs_tables_sort_and_filter_and_the_search_reads_tool_results(page: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    page.execute_script("location.hash = ''")
    rows = read_rows(EXAMPLE)
    heading = next(th for th in page.find_elements(By.CSS_SELECTOR, "table.runs th") if th.text == "wall s")
    heading.click()
    column = [th.text for th in page.find_elements(By.CSS_SELECTOR, "table.runs")[0].find_elements(By.TAG_NAME, "th")]
    first = page.find_elements(By.CSS_SELECTOR, "table.runs")[0]
    walls = [
        float(tr.find_elements(By.TAG_NAME, "td")[column.index("wall s")].text)
        for tr in first.find_elements(By.CSS_SELECTOR, "tbody tr")
    ]
    assert walls == sorted(walls) and heading.get_attribute("data-sort") == "asc"
    Select(page.find_element(By.ID, "filter-preset")).select_by_value("late")
    late = sum(row["preset"] == "late" for row in rows)
    assert page.find_element(By.ID, "search-count").text == f"{late} of {len(rows)} runs shown"
    shown = [
        a.get_attribute("data-run") for a in page.find_elements(By.CSS_SELECTOR, "a[data-run]") if a.is_displayed()
    ]
    assert sorted(shown) == sorted(row["run_id"] for row in rows if row["preset"] == "late")
    Select(page.find_element(By.ID, "filter-preset")).select_by_value("")
    word = "overdue"  # in the task the tools print, and in what pytest says of the hidden tests
    page.find_element(By.ID, "search").send_keys(word)
    count = page.find_element(By.ID, "search-count").text
    assert count.endswith(f"of {len(rows)} runs shown") and not count.startswith("0 ")


def test_a_run_page_shows_its_setup_its_prompts_and_each_steps_server_figures(page: Any) -> None:
    from selenium.webdriver.common.by import By

    row = read_rows(EXAMPLE)[0]
    page.execute_script(f"location.hash = 'run={row['run_id']}'")
    setup = page.find_element(By.ID, "setup").text
    assert setup.startswith(f"model {row['flint_model']}") and f"build {row['server_build']}" in setup
    first = load_request_log(EXAMPLE.parent / "runs" / row["run_id"])
    assert first is not None
    system, task = (page.find_element(By.CSS_SELECTOR, f"#{id} pre") for id in ("system", "task"))
    assert system.get_attribute("textContent") == first.bodies[0]["messages"][0]["content"]
    assert task.get_attribute("textContent") == first.bodies[0]["messages"][1]["content"]
    head = page.find_element(By.CSS_SELECTOR, "#steps .step > div").get_attribute("textContent")  # shown or not
    assert " · computed anew " in head and ", cached " in head and " · prefill " in head and " s, decode " in head
