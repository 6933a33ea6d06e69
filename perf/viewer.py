"""The viewer's page at scale (figures for perf/run.py): `bench view` of a 300-run file, every run with a 20-step
trace and its request log, opened in Debian's headless Chromium (selenium, as tests/bench/analyze/test_view.py):

- the page's size, and the time `bench view` takes to write it;
- the load: from navigation to the matrix drawn, laid out and painted (the page's own performance.now() in the frame
  after its script drew it: the script's own end comes before the layout, seconds before it on a page of every
  run's rows), about a second at most;
- a sort of every runs table by wall time, and a filter by preset, timed in the page; both are checked to have
  worked (the rows in order, the others hidden), or the module fails;
- the load of the page of 10,000 runs (perf/analysis.py's rows, each with its trace), to the matrix drawn: the
  median of LOADS_10K loads, under 2 s (issue 55).

Quick mode: 6 runs (two of each preset: the filter still hides some), one repeat, not judged.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.results.append import append_row
from perf import analysis
from perf.figures import Figure, Unavailable, figure

PRESETS = ["part3", "late", "part2"]
STEPS = 20
FILE = "def add(title, due=None):\n    items.append({'title': title, 'due': due})\n" * 20  # a tool result of ~1.4 KB


def write_results(path: Path, runs: int, seed: int = 3) -> None:
    rng = random.Random(seed)
    for index in range(runs):
        preset, rep = PRESETS[index % len(PRESETS)], index // len(PRESETS) + 1
        run_id = f"20261201T0000{index:04d}-todo_repo-{preset}-4096-r{rep}-{rng.getrandbits(16):04x}"
        wall = rng.lognormvariate(4.0, 0.2)
        append_row(
            path,
            {
                "run_id": run_id,
                "started_at": "2026-12-01T00:00:00+00:00",
                "fixture": "todo_repo",
                "preset": preset,
                "ctx": "4096",
                "rep": str(rep),
                "flint_model": "f.gguf",
                "stop_reason": "step_limit",
                "steps": str(STEPS),
                "wall_s": f"{wall:.2f}",
                "hidden_passed": "2",
                "hidden_total": "6",
            },
        )
        write_run(path.parent / "runs" / run_id, rng)


def write_run(run_dir: Path, rng: random.Random) -> None:
    """A trace of STEPS reads, each answer's message and result in the request log."""
    run_dir.mkdir(parents=True)
    events: list[dict[str, Any]] = [{"t": 0.0, "event": "start", "n_ctx": 4096}]
    log = [
        {
            "request": 0,
            "step": 1,
            "from": 0,
            "messages": [{"role": "user", "content": "Add due dates."}],
            "body": {"stream": False},
        }
    ]
    messages = 1
    for step in range(1, STEPS + 1):
        usage = {"prompt_tokens": 900 + 40 * step, "completion_tokens": 30, "total_tokens": 930 + 40 * step}
        events.append({"t": float(step), "event": "response", "step": step, "usage": usage, "request": step - 1})
        args = {"path": f"m{rng.randint(0, 9)}.py"}
        events.append(
            {
                "t": step + 0.5,
                "event": "tool",
                "step": step,
                "name": "read_file",
                "args": args,
                "ok": True,
                "result_chars": len(FILE),
            }
        )
        call = {"id": f"c{step}", "type": "function", "function": {"name": "read_file", "arguments": json.dumps(args)}}
        added = [
            {"role": "assistant", "content": f"Reading {args['path']} next.", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{step}", "content": FILE},
        ]
        log.append({"request": step, "step": step + 1, "from": messages, "messages": added})
        messages += 2
    events.append({"t": STEPS + 1.0, "event": "stop", "reason": "step_limit", "steps": STEPS})
    (run_dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    (run_dir / "events.requests.jsonl").write_text("".join(json.dumps(line) + "\n" for line in log[:-1]))


def browser(profile: Path) -> Any:
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as e:
        raise Unavailable(f"selenium is not installed ({e})") from e
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver:
        raise Unavailable("no chromium and chromedriver (apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--disable-background-networking",
        "--window-size=1400,1000",
    ]:
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(driver), options=options)


SORT = """const start = performance.now();
const th = [...document.querySelectorAll("table.runs thead th")].filter((h) => h.textContent.startsWith("wall s"));
th.forEach((h) => h.click());
const took = performance.now() - start;
const walls = [...document.querySelectorAll("table.runs")].map((t) => [...t.tBodies[0].rows].map((r) =>
  Number(r.children[[...t.tHead.rows[0].children].findIndex((h) => h.textContent.startsWith("wall s"))].textContent)));
return [took, walls.every((w) => w.every((v, i) => i === 0 || w[i - 1] <= v))];"""
FILTER = """const start = performance.now();
const select = document.getElementById("filter-preset");
select.value = "late"; select.dispatchEvent(new Event("change"));
const took = performance.now() - start;
const runs = [...document.querySelectorAll("table.runs tbody tr:not([hidden]) a[data-run]")];
return [took, runs.map((a) => a.dataset.run), document.getElementById("search-count").textContent];"""
# the frame after the script drew the matrix (bench.analyze.view_script sets it): waited for, as a reader waits
DRAWN = "return document.body.dataset.drawn ? Number(document.body.dataset.drawn) : null"
LOADS_10K = 3


def measure_page(page: Path, profile: Path, runs: int) -> tuple[float, float, float]:
    """Seconds to the matrix drawn, milliseconds to sort and to filter; each checked to have done its work."""
    driver = browser(profile)
    try:
        ready = load(driver, page)
        sort_ms, ordered = driver.execute_script(SORT)
        filter_ms, visible, said = driver.execute_script(FILTER)
    finally:
        driver.quit()
    expected = sum(1 for i in range(runs) if PRESETS[i % len(PRESETS)] == "late")
    late = all("-late-" in run_id for run_id in visible)  # a table draws its first runs only: those left are late
    if not ordered or not visible or not late or not said.startswith(f"{expected} of {runs}"):
        raise RuntimeError(f"the viewer's sort or filter did not work: sorted {ordered}, shown {said!r}")
    return ready, float(sort_ms), float(filter_ms)


def load(driver: Any, page: Path) -> float:
    """Seconds from navigation to the matrix drawn (the page's frame after its script drew it)."""
    driver.get(page.as_uri())
    deadline = time.monotonic() + 120
    while (drawn := driver.execute_script(DRAWN)) is None:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{page.name}: the matrix was not drawn in 120 s")
        time.sleep(0.05)
    return float(drawn) / 1000


def load_at_scale(tmp: Path) -> list[float]:
    """Seconds to the matrix drawn of the page of 10,000 runs (perf/analysis.py's rows and traces, as a bench
    writes them), LOADS_10K times: the page parses each run's steps only when the run is opened
    (bench.analyze.view_page), and draws the first rows of each runs table (bench.analyze.view_script)."""
    results, page = tmp / "scale" / "results.csv", tmp / "scale.html"
    results.parent.mkdir()
    analysis.write_results(results, 1000, seed=2)
    command = [sys.executable, "-m", "bench", "-q", "view", str(results), "--out", str(page)]
    subprocess.run(command, check=True, capture_output=True)
    loads = []
    for repeat in range(LOADS_10K):
        driver = browser(tmp / f"profile-scale-{repeat}")
        try:
            loads.append(load(driver, page))
        finally:
            driver.quit()
    return loads


def figures(quick: bool) -> list[Figure]:
    runs, repeats = (6, 1) if quick else (300, 3)
    with tempfile.TemporaryDirectory(prefix="perf-viewer-") as tmp:
        results, page = Path(tmp) / "results.csv", Path(tmp) / "view.html"
        write_results(results, runs)
        write_times: list[float] = []
        loads: list[float] = []
        sorts: list[float] = []
        filters: list[float] = []
        for repeat in range(repeats):
            start = time.perf_counter()
            command = [sys.executable, "-m", "bench", "-q", "view", str(results), "--out", str(page)]
            subprocess.run(command, check=True, capture_output=True)
            write_times.append(time.perf_counter() - start)
            ready, sort_ms, filter_ms = measure_page(page, Path(tmp) / f"profile-{repeat}", runs)
            loads, sorts, filters = [*loads, ready], [*sorts, sort_ms], [*filters, filter_ms]
        size = page.stat().st_size / 2**20
        loaded = [] if quick else load_at_scale(Path(tmp))
    scale = f", {runs} runs"
    return [
        figure(f"viewer page size{scale}", "MiB", [size], None, quick),
        figure(f"bench view{scale}", "s", write_times, None, quick),
        figure(f"viewer load to matrix drawn{scale}", "s", loads, "<= 1.5", quick),
        figure(f"viewer sort by wall time{scale}", "ms", sorts, "<= 500", quick),
        figure(f"viewer filter by preset{scale}", "ms", filters, "<= 500", quick),
        *([figure("viewer load to matrix drawn, 10,000 runs", "s", loaded, "<= 2")] if loaded else []),
    ]


if __name__ == "__main__":
    for found in figures(quick="--quick" in sys.argv):
        print(f"{found['figure']:<40} {found['median']:>10.3f} {found['unit']}")
