"""Several server pairs in one bench (bench.run.workers): each worker's settings, the shared queue, the one writer,
the display; and whole benches of two workers with the fakes of bench.testing.fakes (a second worker's servers
killed mid-run, Ctrl-C), whose rows must be a sequential bench's runs."""

from __future__ import annotations

import gc
import importlib.util
import io
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from small_task import SETTINGS

from bench import ROOT
from bench.config import BenchConfig
from bench.errors import PrerequisiteError, ResultsError, Terminated
from bench.fixtures.fixture import load_fixture
from bench.llama.gpu_pin import watched_uuids
from bench.results.append import read_rows
from bench.results.schema import run_key
from bench.run.display import Display
from bench.run.finishing import on_sigterm
from bench.run.outputs import INTERRUPTED_SUFFIX
from bench.run.plan import PlannedRun, RunInputs, plan_runs
from bench.run.runner import Bench
from bench.run.workers import RowWriter, RunQueue, worker_configs
from bench.sandbox.local import LocalSandboxes
from bench.servers.base import Endpoints
from bench.testing.fake_pynvml import GIB, FakeDevice, FakeNvml, State
from bench.testing.fake_replies import hang
from bench.testing.fakes import FakeFactory, FakeSandboxes, FakeServers, ScriptedRun

CARDS = [FakeDevice(f"GPU-0000000{i}-aaaa-bbbb-cccc-dddddddddddd", [State(used=GIB)]) for i in range(3)]
TODO = load_fixture("todo_repo", ROOT)


def test_one_worker_per_card_each_pinned_and_watching_its_own() -> None:
    nvml = FakeNvml(CARDS)
    workers = worker_configs(BenchConfig(gpu_devices="all"), nvml)
    assert [w.gpu_device for w in workers] == [card.uuid for card in CARDS]
    assert all(w.workers == 1 and w.gpu_devices is None for w in workers)
    assert [watched_uuids(w.gpu_device, True, nvml) for w in workers] == [[card.uuid] for card in CARDS]
    assert [w.gpu_device for w in worker_configs(BenchConfig(gpu_devices=[2, "0"]), nvml)] == ["2", "0"]
    with pytest.raises(PrerequisiteError, match="past this host's GPUs"):  # each card named is one of the host's
        worker_configs(BenchConfig(gpu_devices=[1, 3]), nvml)
    with pytest.raises(PrerequisiteError, match="names 1 twice"):
        worker_configs(BenchConfig(gpu_devices=[1, 1]))
    with pytest.raises(PrerequisiteError, match="lists no GPU"):
        worker_configs(BenchConfig(gpu_devices="all"), FakeNvml([]))


def test_cpu_workers_share_the_cores_unless_threads_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("bench.run.workers.default_threads", lambda: 15)
    assert [w.threads for w in worker_configs(BenchConfig(workers=2))] == [7, 7]
    assert [w.threads for w in worker_configs(BenchConfig(workers=3, threads=4))] == [4, 4, 4]
    assert [w.threads for w in worker_configs(BenchConfig())] == [None]  # one pair: as before
    with pytest.raises(ValueError, match="not both"):
        BenchConfig(workers=2, gpu_devices="all")


def test_the_queue_gives_each_run_once_preferring_the_takers_window() -> None:
    plan = [PlannedRun(TODO, "sha", "part3", ctx, rep) for ctx in (4096, 8192) for rep in (1, 2)]
    queue = RunQueue(plan)
    first = queue.take(None)
    assert first is not None and first[0] == 1
    taken = queue.take(8192)
    assert taken is not None and (taken[0], taken[1].ctx) == (3, 8192)  # no restart for the worker on 8192
    rest = [queue.take(4096), queue.take(4096)]
    assert [r[0] for r in rest if r] == [2, 4] and queue.take(4096) is None
    stopped = RunQueue(plan)
    stopped.stop()
    assert stopped.take(None) is None


def test_one_writer_appends_every_row_whole_from_many_threads(tmp_path: Path) -> None:
    writer = RowWriter(tmp_path / "r.csv")
    base = {"fixture": "todo_repo", "preset": "part3", "stop_reason": "done", "error": "x" * 3000}

    def write(worker: int) -> None:
        for i in range(20):
            writer.append(base | {"run_id": f"w{worker}-{i}"})

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    rows = read_rows(tmp_path / "r.csv")
    assert sorted(r["run_id"] for r in rows) == sorted(f"w{n}-{i}" for n in range(4) for i in range(20))
    assert all(r["error"] == "x" * 3000 for r in rows)


def test_the_display_shows_every_worker() -> None:
    stream = io.StringIO()
    display = Display(["w1 gpu 0", "w2 gpu 1"], stream)
    display.show(0, "run 1/4 todo_repo: step 2", final=False)
    display.show(1, "run 2/4 todo_repo: done", final=True)
    assert stream.getvalue().splitlines() == [
        "[w1 gpu 0] run 1/4 todo_repo: step 2",
        "[w2 gpu 1] run 2/4 todo_repo: done",
    ]


# Whole benches of two workers with the fakes: each run is graded by pytest in a child process, on the suite's small
# task (tests/small_task.py: one pytest a grading), since these tests read the plan and the rows, not the grading.


def two_workers(tmp_path: Path, scripts: list[list[ScriptedRun]], **changes: object) -> tuple[Bench, BenchConfig]:
    settings = {**SETTINGS, "use_jeff": False, "presets": ["part3"], "ctx": [4096, 8192], "reps": 2, "workers": 2}
    config = BenchConfig(out=str(tmp_path / "r.csv"), **(settings | changes))  # type: ignore[arg-type]
    factories = []
    for worker, script in zip(worker_configs(config), scripts, strict=True):
        servers = FakeServers()
        factories.append(FakeFactory(worker, servers, FakeSandboxes(servers, script), checkout=ROOT))
    return Bench(config, factories=factories, checkout=ROOT), config


def planned(config: BenchConfig) -> list[tuple[str, str]]:
    return sorted((str(run.ctx), str(run.rep)) for run in plan_runs(config.model_copy(update={"workers": 1}), ROOT))


@pytest.mark.processes
def test_two_workers_run_the_plan_once_and_a_killed_server_costs_its_run_only(tmp_path: Path) -> None:
    bench, config = two_workers(tmp_path, [[], [ScriptedRun(kill_servers=True)]])
    rows = bench.run()
    assert read_rows(tmp_path / "r.csv") == rows
    assert sorted((r["ctx"], r["rep"]) for r in rows) == planned(config)  # a sequential bench's runs, once each
    sequential = config.model_copy(update={"workers": 1})
    pair = FakeServers()
    endpoints = pair.start(4096)  # what a fake pair reports, the same for every pair and window
    pair.stop()
    inputs = [
        RunInputs.of(run, sequential, endpoints, bench.choice, bench.provenance) for run in plan_runs(sequential, ROOT)
    ]
    assert sorted(run_key(r) for r in rows) == sorted(i.key() for i in inputs)  # each row with a single bench's inputs
    failed = [r for r in rows if r["stop_reason"] == "infra_error"]
    assert len(failed) == 1 and "died during the run" in failed[0]["error"]
    assert all(r["stop_reason"] == "done" and r["error"] == "" for r in rows if r not in failed)
    starts = [factory.fake_servers.starts for factory in bench.factories]  # type: ignore[attr-defined]
    assert all(starts) and sum(len(s) for s in starts) <= 4  # both worked; the killed pair was started again
    assert all(factory.fake_servers.flint is None for factory in bench.factories)  # type: ignore[attr-defined]


@pytest.mark.processes
@pytest.mark.parametrize(
    ("signum", "handler", "raised"),
    [(signal.SIGINT, signal.default_int_handler, KeyboardInterrupt), (signal.SIGTERM, on_sigterm, Terminated)],
    ids=["SIGINT", "SIGTERM"],
)
def test_ctrl_c_stops_every_worker_and_keeps_every_row(
    tmp_path: Path, signum: int, handler: Callable[..., None], raised: type[BaseException]
) -> None:
    # The small task's runs: the stop is asked while a worker runs, grades, writes a row or starts its servers;
    # it stops at its next check (bench.stopping), and its clean-up (stopping its servers) is never cut short.
    bench, _ = two_workers(tmp_path, [[], []], reps=4)

    def first_row_written() -> bool:  # not after a fixed time: on an idle machine all 8 runs end in 4 s
        try:
            return bool(read_rows(tmp_path / "r.csv"))
        except ResultsError:  # its header is being written
            return False

    stopped, _ = bench_until(bench, first_row_written, signum, handler)
    assert type(stopped) is raised, stopped
    rows = read_rows(tmp_path / "r.csv")
    assert len(rows) < 8 and rows == bench.rows  # what was written is kept, nothing after the stop
    cut = [p for p in (tmp_path / "runs").iterdir() if p.name.endswith(INTERRUPTED_SUFFIX)]
    # each worker's run in progress is marked cut short, unless its agent had ended: then its row is written first
    assert len(cut) <= 2
    ran = {p.name for p in (tmp_path / "runs").iterdir() if p not in cut and p.name != "servers"}
    assert ran == {row["run_id"] for row in rows}  # every run has its row, or its folder says it was cut short
    assert all(factory.fake_servers.flint is None for factory in bench.factories)  # type: ignore[attr-defined]


class HungServers(FakeServers):
    """A pair whose Flint never answers a chat request (until it is stopped): the agent waits for its first answer."""

    def start(self, ctx: int, jeff_ctx: int | None = None) -> Endpoints:
        endpoints = super().start(ctx)
        assert self.flint is not None
        self.flint.default = hang()
        return endpoints


@pytest.mark.processes
def test_ctrl_c_while_each_workers_agent_runs_cuts_both_runs_short_at_once(tmp_path: Path) -> None:
    settings = {**SETTINGS, "use_jeff": False, "presets": ["part3"], "ctx": [4096], "reps": 2, "workers": 2}
    settings |= {"out": str(tmp_path / "r.csv"), "sandbox": "local", "agent_retries": 0}  # the real agent, here
    config = BenchConfig(**settings)  # type: ignore[arg-type]
    factories = []
    for worker in worker_configs(config):
        servers = HungServers()
        factories.append(FakeFactory(worker, servers, LocalSandboxes(worker, checkout=ROOT), checkout=ROOT))  # type: ignore[arg-type]
    bench = Bench(config, factories=factories, checkout=ROOT)
    flints = [factory.fake_servers for factory in factories]

    def both_agents_wait() -> bool:  # each agent, a process of its own, has asked its Flint
        return all(servers.flint is not None and servers.flint.requests for servers in flints)

    stopped, seconds = bench_until(bench, both_agents_wait, signal.SIGINT, signal.default_int_handler)
    assert type(stopped) is KeyboardInterrupt, stopped
    assert seconds < 10  # each worker saw the stop in its wait for the agent, not after run_timeout_s
    assert not (tmp_path / "r.csv").exists() or read_rows(tmp_path / "r.csv") == []
    cut = [p for p in (tmp_path / "runs").iterdir() if p.name.endswith(INTERRUPTED_SUFFIX)]
    assert len(cut) == 2  # both runs cut short, their folders marked
    assert all(servers.flint is None for servers in flints)
    assert not agents_left()  # each agent's process group killed


def agents_left() -> list[str]:
    """The agent processes this test process started that still run."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            stat, argv = (proc / "stat").read_text(), (proc / "cmdline").read_text()
        except OSError:  # gone meanwhile
            continue
        if int(stat[stat.rfind(")") + 2 :].split()[1]) == os.getpid() and "\x00-m\x00agent\x00" in argv:
            found.append(argv)
    return found


def bench_until(
    bench: Bench, ready: Callable[[], bool], signum: int, handler: Callable[..., None]
) -> tuple[BaseException | None, float]:
    """Run `bench` until `ready()`, then send this process `signum` (with `handler` installed, as `bench run` has
    it): what bench.run() raised (None: it ended), and the seconds from the signal until then."""
    stop, sent = threading.Event(), []

    def signal_when_ready() -> None:
        while not stop.wait(0.05):
            if ready():  # a real signal: interrupt_main() alone does not wake a main thread blocked in a wait
                sent.append(time.monotonic())
                os.kill(os.getpid(), signum)
                return

    # A shell that starts CI in the background leaves SIGINT ignored in its children: Ctrl-C as a terminal has it.
    previous = signal.signal(signum, handler)
    watcher = threading.Thread(target=signal_when_ready, daemon=True)
    watcher.start()
    try:
        bench.run()
        return None, 0.0
    except BaseException as e:  # noqa: BLE001 - the stop, or what broke: the test says which it expects
        return e, time.monotonic() - sent[0] if sent else -1.0
    finally:
        stop.set()
        watcher.join()
        signal.signal(signum, previous)
        gc.collect()  # anything the stop left open is closed now, failing this test, not a later one


def test_perf_scale_serves_each_request_in_its_fixed_time() -> None:
    spec = importlib.util.spec_from_file_location("perf_scale", ROOT / "perf" / "scale.py")
    assert spec is not None and spec.loader is not None
    scale = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scale)
    servers = scale.TimedServers(0.3)
    endpoints = servers.start(4096)
    try:
        start = time.monotonic()
        answer = httpx.post(
            f"{endpoints.flint_url}/v1/chat/completions", json={"messages": [{"role": "user", "content": "x"}]}
        )
        assert answer.status_code == 200 and answer.json()["choices"][0]["message"]["tool_calls"]
        assert time.monotonic() - start >= 0.3
    finally:
        servers.stop()
    assert callable(scale.figures)
