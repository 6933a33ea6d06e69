"""The shape of the code: bench/ in layers that follow the data flow, no import cycles, the agent standalone.

A lower layer never imports a higher one (measure and score never import analyze, servers never import run, ...),
so each folder can be read, tested and changed knowing only what lies below it. Imports inside functions count.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# bench's top-level modules and folders, lowest first. Above the base, the settings and the row a bench writes, and
# its tools (the container engine, the measuring instruments), the stages in the order the data flows: the fixture,
# llama.cpp itself, the server kinds made of it, the sandboxes the agent runs in, the grading of what it did, the
# reading of results; then the runner, the command line and the test doubles. A module may import its own layer and
# the ones below.
LAYERS = [
    {
        "errors",
        "logs",
        "processes",
        "stopping",
        "priority",
        "yaml_file",
        "atomic_file",
        "file_lock",
        "ownership",
        "provenance",
        "untrusted",
        "json_documents",
        "json_lines",
        "http_client",
    },
    {"config", "setting_types", "server_args", "environment", "results", "agents", "languages"},
    {"containers", "measure"},
    {"fixtures"},
    {"llama"},
    {"servers"},
    {"sandbox"},
    {"score"},
    {"analyze"},
    {"run", "replay"},
    {"cli", "__main__", "gpu_check", "testing", "rehearsal", "docgen", "docgen_examples", "submit"},
]
LAYER_OF = {part: level for level, parts in enumerate(LAYERS) for part in parts}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Every module `path` imports (at the top or inside a function), as dotted names."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def bench_modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted((ROOT / "bench").rglob("*.py"))}


def layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYER_OF.get(parts[1]) if len(parts) > 1 and parts[0] == "bench" else None


def test_every_part_of_bench_has_a_layer() -> None:
    unplaced = sorted(m for m in bench_modules() if m != "bench" and layer(m) is None)
    assert not unplaced, f"add these to LAYERS: {unplaced}"


@pytest.mark.parametrize("module", sorted(bench_modules()))
def test_no_module_imports_a_higher_layer(module: str) -> None:
    mine = layer(module)
    if mine is None:
        return
    upward = sorted(
        target
        for target in imports_of(bench_modules()[module])
        if (theirs := layer(target)) is not None and theirs > mine
    )
    assert not upward, f"{module} (layer {mine}) imports higher layers: {upward}"


def test_no_import_cycles_between_bench_modules() -> None:
    modules = bench_modules()
    graph = {m: {t for t in imports_of(p) if t in modules and t != m} for m, p in modules.items()}
    state: dict[str, str] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                cycle = path[path.index(target) :] + [target] if target in path else [module, target]
                pytest.fail(f"import cycle: {' -> '.join(cycle)}")
            if target not in state:
                visit(target, [*path, target])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


def test_the_agent_never_imports_the_bench() -> None:
    """The agent runs alone in a bare python3 container: standard library and its own modules only."""
    for path in sorted((ROOT / "agent").glob("*.py")):
        assert not [m for m in imports_of(path) if m.split(".")[0] == "bench"], path.name


def test_only_the_article_kind_imports_the_agent() -> None:
    """The bench meets agent/ in one place, bench/agents/article.py: every other module asks the kind."""
    importers = sorted(
        m for m, path in bench_modules().items() if any(t.split(".")[0] == "agent" for t in imports_of(path))
    )
    assert importers == ["bench.agents.article"]


# Where this repository is (bench.ROOT): the entry points hold it (the commands of `bench`, the scripts that `make`
# runs) and pass it to the modules that need its files, which take it as an argument (`checkout`).
ENTRY_POINTS = {"bench.cli", "bench.__main__", "bench.docgen", "bench.docgen_examples", "bench.gpu_check"}
ENTRY_POINTS |= {"bench.rehearsal.__main__"}
# Library modules that are also scripts of `make` (python -m): they read ROOT in their main() only.
SCRIPTS = {"bench.containers.local_base", "bench.rehearsal.source", "bench.results.docs", "bench.submit.image"}


def imports_root_outside_main(path: Path) -> bool:
    """Whether `path` imports bench.ROOT anywhere but inside a function named main."""
    tree = ast.parse(path.read_text())
    in_main = {
        id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name == "main" for n in ast.walk(f)
    }
    return any(
        isinstance(node, ast.ImportFrom)
        and node.module == "bench"
        and any(alias.name == "ROOT" for alias in node.names)
        and id(node) not in in_main
        for node in ast.walk(tree)
    )


def test_only_the_entry_points_import_the_repositorys_root() -> None:
    """A module that needs the checkout's files (a Dockerfile, compose.yaml, results/) is given the checkout by its
    caller, so that it can be read, tested and used knowing only its arguments."""
    importers = {m for m, path in bench_modules().items() if "bench.ROOT" in imports_of(path)}
    entries = {m for m in importers if m in ENTRY_POINTS or m.rsplit(".", 1)[0] in ENTRY_POINTS}
    scripts = {m for m in importers & SCRIPTS if not imports_root_outside_main(bench_modules()[m])}
    assert sorted(importers - entries - scripts) == []


def test_analyze_reads_results_and_nothing_that_makes_them() -> None:
    """analyze reads what benches wrote (rows and traces): nothing above results in the data flow, not the runner,
    the servers or the sandboxes."""
    # and what an agent kind says of itself (the article's estimate of characters a token, for the clearings table)
    allowed = {"errors", "yaml_file", "provenance", "results", "analyze", "json_documents", "agents"}
    reads = {
        (module, target)
        for module, path in bench_modules().items()
        if module.startswith("bench.analyze")
        for target in imports_of(path)
        if target.startswith("bench.") and target.split(".")[1] not in allowed
    }
    # the run folders' events.jsonl, read for the report's figures, and their request logs, for the viewer's steps
    read = ("bench.measure.trace", "bench.measure.request_log")
    assert sorted(r for r in reads if r[1] not in read and not r[1].startswith(tuple(f"{m}." for m in read))) == []
