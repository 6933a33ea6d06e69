"""A group of more runs than a runs table draws at first (the page of 10,000 runs would otherwise lay out every row
before its first paint): in the real headless Chromium, the table draws its first PAGE runs, sorting orders every
run of the group, "show all" draws the rest, the filters count every run, and a drawn run opens."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import pytest
from test_view import browser as browser  # the real headless Chromium, as test_view opens it

from bench.analyze.view_script import SCRIPT
from bench.cli import main
from bench.results.append import append_row, read_rows

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("viewer")]

PAGE = int(re.search(r"const PAGE = (\d+);", SCRIPT)[1])  # type: ignore[index]
LONG, SHORT = 2 * PAGE + 7, 3  # runs of part3 (one group longer than a page), of late


def results(path: Path) -> Path:
    rng = random.Random(7)
    for index in range(LONG + SHORT):
        preset, rep = ("part3", index + 1) if index < LONG else ("late", index - LONG + 1)
        row = {"run_id": f"20261207T0000{index:04d}-todo_repo-{preset}-4096-r{rep}", "fixture": "todo_repo"}
        row |= {"started_at": "2026-12-07T00:00:00+00:00", "preset": preset, "ctx": "4096", "rep": str(rep)}
        row |= {"flint_model": "f.gguf", "stop_reason": "done", "steps": "3", "hidden_passed": "6", "hidden_total": "6"}
        append_row(path, row | {"wall_s": f"{rng.uniform(10, 500):.2f}"})
    return path


DRAWN = """return [...document.querySelectorAll("table.runs")].map((t) => {
  const column = [...t.tHead.rows[0].children].findIndex((h) => h.textContent.startsWith("wall s"));
  return [...t.tBodies[0].rows].map((r) => Number(r.children[column].textContent));
});"""


def test_a_long_group_draws_a_page_sorts_every_run_and_shows_the_rest_on_request(tmp_path: Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select
    from test_view import severe

    csv, page = results(tmp_path / "results.csv"), tmp_path / "view.html"
    assert main(["view", str(csv), "--out", str(page)]) == 0
    walls = sorted(float(row["wall_s"]) for row in read_rows(csv) if row["preset"] == "part3")
    browser.get(page.as_uri())
    long_group = next(g for g in browser.find_elements(By.CSS_SELECTOR, "details.group") if "part3" in g.text)
    more = long_group.find_element(By.CSS_SELECTOR, "button.more")
    assert more.is_displayed() and more.text == f"show all {LONG} ({PAGE} drawn)"
    assert long_group.find_element(By.CSS_SELECTOR, ".shown").text == f"{LONG} of {LONG} runs shown"
    heading = next(th for th in long_group.find_elements(By.CSS_SELECTOR, "table.runs th") if th.text == "wall s")
    heading.click()  # ascending: the drawn rows are the group's fastest runs, not the first drawn ones sorted
    (drawn,) = [w for w in browser.execute_script(DRAWN) if len(w) > SHORT]
    assert drawn == walls[:PAGE]
    heading.click()
    (drawn,) = [w for w in browser.execute_script(DRAWN) if len(w) > SHORT]
    assert drawn == walls[::-1][:PAGE]
    more.click()
    (drawn,) = [w for w in browser.execute_script(DRAWN) if len(w) > SHORT]
    assert drawn == walls[::-1] and not more.is_displayed()

    Select(browser.find_element(By.ID, "filter-preset")).select_by_value("late")
    assert browser.find_element(By.ID, "search-count").text == f"{SHORT} of {LONG + SHORT} runs shown"
    assert long_group.find_element(By.CSS_SELECTOR, ".shown").text == f"0 of {LONG} runs shown"
    assert [len(w) for w in browser.execute_script(DRAWN)] in ([0, SHORT], [SHORT, 0])
    Select(browser.find_element(By.ID, "filter-preset")).select_by_value("")
    link = long_group.find_element(By.CSS_SELECTOR, "a[data-run]")
    run_id = link.get_attribute("data-run")
    link.click()
    assert run_id in browser.find_element(By.CSS_SELECTOR, "#root p.note").text
    assert severe(browser) == []
