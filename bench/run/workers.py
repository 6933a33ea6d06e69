"""Several pairs of servers on one host: one worker per GPU (`gpu_devices`) or N pairs on the CPU (`workers: N`).

Each worker is a bench of one pair (bench.run.runner.Bench, sharing the coordinator's writer): its own instance
(id, state file, names: compose project, sandbox network, forwarder, firewall rule), its own servers on ports of
their own, pinned to its card (its config's gpu_device: CUDA_VISIBLE_DEVICES for host processes, device_ids for
compose), and its own NVML sampler watching that card and its servers' processes. The workers take runs from one
queue (a worker prefers a run of the window its servers serve, so servers restart as seldom as they would in one
bench), and one writer appends every row whole, one at a time. Ctrl-C (or SIGTERM) stops every worker: each is
asked, and stops at its next check (bench.stopping); each run cut short is marked as in a single bench, every row
written is kept.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Protocol

from bench.config import BenchConfig
from bench.errors import PrerequisiteError
from bench.llama.gpu_cards import check_cards
from bench.measure.nvml import start_nvml
from bench.results.append import append_row, encode_line
from bench.results.schema import COLUMNS
from bench.run.display import Display, LaneProgress
from bench.run.finishing import FINISHING
from bench.run.instance import BenchInstance
from bench.run.plan import PlannedRun
from bench.run.progress import Progress
from bench.servers.base import Servers, default_threads
from bench.stopping import Stop, stoppable, unchecked

if TYPE_CHECKING:
    from bench.run.choices import Factory

Row = dict[str, str]
log = logging.getLogger(__name__)


class Bench(Protocol):
    """What the workers need of a bench of one pair (bench.run.runner.Bench)."""

    factory: Factory
    out: Path
    worker_label: str
    writer: RowWriter
    current_ctx: int | None

    def lane(self, factory: Factory) -> Bench: ...

    def run_lane(self, queue: RunQueue, servers: Servers, existing: list[Row], progress: Progress) -> None: ...


STOP_WAIT_S = 120.0  # how long Ctrl-C waits for a worker to stop its run and its servers


def worker_configs(config: BenchConfig, nvml: ModuleType | None = None) -> list[BenchConfig]:
    """The settings of each worker: one per GPU of `gpu_devices` (its gpu_device that card), or `workers` copies
    sharing the cores (embedded servers' threads divided among them unless `threads` is set). Every card named is
    checked against the host's first (bench.llama.gpu_cards), except for external servers, which the bench does not
    place."""
    one = {"workers": 1, "gpu_devices": None}
    if config.gpu_devices is None:
        if config.servers != "external":
            where = "GPU_DEVICE" if os.environ.get("GPU_DEVICE") == config.gpu_device else "gpu_device"
            check_cards([config.gpu_device], where, named=False, nvml=nvml)
        threads = config.threads or max(1, default_threads() // config.workers)
        update = one if config.workers == 1 else {**one, "threads": threads}
        return [config.model_copy(update=update) for _ in range(config.workers)]
    devices = gpu_uuids(nvml) if config.gpu_devices == "all" else list(config.gpu_devices)
    if not devices:
        raise PrerequisiteError(
            "gpu_devices: all, but NVML lists no GPU here: name the cards (gpu_devices: [0, 1]), or run CPU pairs "
            "with workers: N"
        )
    twice = sorted({device for device in devices if devices.count(device) > 1})
    if twice:
        raise PrerequisiteError(f"gpu_devices names {twice[0]} twice: one worker per card")
    if config.gpu_devices != "all":
        check_cards(devices, "gpu_devices", named=True, nvml=nvml)
    return [config.model_copy(update={**one, "gpu_device": device}) for device in devices]


def gpu_uuids(module: ModuleType | None = None) -> list[str]:
    """Every GPU NVML (pynvml, or `module`) lists here, by UUID (empty without a driver or a GPU)."""
    nvml, _ = start_nvml(module)
    if nvml is None:
        return []
    try:
        found = [nvml.nvmlDeviceGetUUID(nvml.nvmlDeviceGetHandleByIndex(i)) for i in range(nvml.nvmlDeviceGetCount())]
    finally:
        with contextlib.suppress(nvml.NVMLError):
            nvml.nvmlShutdown()
    return [uuid.decode() if isinstance(uuid, bytes) else str(uuid) for uuid in found]


def worker_label(worker: BenchConfig, config: BenchConfig, number: int) -> str:
    """How the display and the log name a worker: its number, and its card when it has one of its own."""
    return f"w{number} gpu {worker.gpu_device}" if config.gpu_devices is not None else f"w{number}"


class RunQueue:
    """The plan's runs (with their 1-based place in it), taken one at a time by the workers."""

    def __init__(self, plan: list[PlannedRun]) -> None:
        self.pending = list(enumerate(plan, start=1))
        self.lock = threading.Lock()
        self.stopped = False

    def take(self, ctx: int | None) -> tuple[int, PlannedRun] | None:
        """The first run of window `ctx` (the taker's servers need no restart for it), else the first run."""
        with self.lock:
            if self.stopped or not self.pending:
                return None
            pick = next((i for i, (_, run) in enumerate(self.pending) if run.ctx == ctx), 0)
            return self.pending.pop(pick)

    def runs(self, bench: Bench) -> Iterator[tuple[int, PlannedRun]]:
        while (taken := self.take(bench.current_ctx)) is not None:
            yield taken

    def stop(self) -> None:
        """No worker takes another run (each finishes the one it holds)."""
        with self.lock:
            self.stopped = True


class RowWriter:
    """The one writer of a bench's results file: rows from every worker, each appended whole, one at a time."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.rows: list[Row] = []
        self.lock = threading.Lock()

    def header(self) -> None:
        """A file of no rows, the header alone (a shard that got no runs), unless the file is there already."""
        if not self.out.exists() or self.out.stat().st_size == 0:
            self.out.parent.mkdir(parents=True, exist_ok=True)
            self.out.write_bytes(encode_line(COLUMNS))

    def append(self, row: Row) -> None:
        with self.lock:
            append_row(self.out, row)
            self.rows.append(row)


class Lanes:
    """The workers of one bench: a bench of one pair each, with its instance; the coordinator is the first."""

    def __init__(self, bench: Bench, factories: list[Factory]) -> None:
        self.benches = [bench, *(bench.lane(factory) for factory in factories[1:])]
        self.instances = [BenchInstance(factory.ownership, factory.engine) for factory in factories]
        self.failures: list[BaseException] = []

    def start(self, out: Path) -> list[str]:
        """Each worker's instance reaps what dead benches left and records itself; one line for each."""
        lines = []
        for number, instance in enumerate(self.instances, start=1):
            lines += instance.start(out)
            worker = f"worker {number} ({self.benches[number - 1].worker_label}): " if len(self.instances) > 1 else ""
            lines.append(f"{worker}instance {instance.names.instance} (its state: {instance.ownership.state_file})")
        return lines

    def temp_files(self) -> contextlib.AbstractContextManager[None]:
        """Temp files go to the first instance's folder (tempfile's default is one per process)."""
        return self.instances[0].temp_files()

    def servers(self, bench: Bench, plan: list[PlannedRun]) -> Servers:
        """A worker's pair, its logs under runs/servers/<its instance id>/."""
        instance = self.instances[self.benches.index(bench)]
        fixtures = list({run.fixture.name: run.fixture for run in plan}.values())  # forced tool calls offer theirs
        return bench.factory.make_servers(bench.out.parent / "runs" / "servers" / instance.names.instance, fixtures)

    def run(self, queue: RunQueue, plan: list[PlannedRun], existing: list[Row]) -> None:
        """Every worker in a thread of its own until the queue is empty. A worker's error (servers that never
        started, a full disk) stops the queue: the others finish their runs, then it is raised here. Ctrl-C or
        SIGTERM, which land in this thread, are asked of every worker, which raises it itself where it checks
        (bench.stopping); a run whose agent has ended holds it until its row is written (bench.run.finishing)."""
        display = Display([bench.worker_label for bench in self.benches])
        done = [threading.Event() for _ in self.benches]
        stops = [Stop(FINISHING.hold) for _ in self.benches]
        threads = [
            threading.Thread(
                target=self._work,
                args=(bench, queue, plan, existing, LaneProgress(display, number, len(plan))),
                kwargs={"done": done[number], "stop": stops[number]},
                name=f"worker-{number + 1}",
                daemon=True,
            )
            for number, bench in enumerate(self.benches)
        ]
        for thread in threads:
            thread.start()
        # Each worker's own event says when it is done: Thread.join cut short by Ctrl-C can mark a running thread
        # stopped (CPython gh-90882), and is_alive() then lies.
        try:
            while not all(event.wait(0.2) for event in done):
                pass
        except BaseException as stop:
            queue.stop()
            for asked in stops:
                asked.ask(type(stop))
            deadline = time.monotonic() + STOP_WAIT_S
            for event in done:
                event.wait(max(0.0, deadline - time.monotonic()))
            raise
        if self.failures:
            raise self.failures[0]

    def _work(
        self,
        bench: Bench,
        queue: RunQueue,
        plan: list[PlannedRun],
        existing: list[Row],
        progress: LaneProgress,
        *,
        done: threading.Event,
        stop: Stop,
    ) -> None:
        try:
            with stoppable(stop):
                bench.run_lane(queue, self.servers(bench, plan), existing, progress)
        except BaseException as e:  # noqa: BLE001 - handed to the coordinator, which raises it
            if not isinstance(e, KeyboardInterrupt):
                log.error("worker %s stopped: %s", bench.worker_label, e)
            self.failures.append(e)
            queue.stop()
        finally:
            done.set()

    def close(self) -> None:
        for bench in self.benches:
            bench.factory.sandboxes.close()
        for instance in self.instances:
            instance.close()


def stop_servers(servers: Servers) -> None:
    """Stop a pair's servers to the end: a stop asked of its worker meanwhile is not checked in there (bench.stopping),
    and a Ctrl-C that lands inside the stop (in the main thread, where a bench of one pair runs) begins it again."""
    with unchecked():
        try:
            servers.stop()
        except KeyboardInterrupt:  # Terminated too
            servers.stop()
            raise
