"""`python -m bench.docgen` (`make docs`): the pages made from the models, never edited by hand.

docs/results.md comes from the row model (bench/results/row.py, through bench/results/docs.py), docs/config.md
from the config model's field docstrings (bench/config.py), with each key's default, what it allows, its `bench run`
flag and its environment variable, docs/json.md from the schemas of the commands' `--json` documents
(bench/json_documents.py), and the worked examples (docs/example-report/, blocks of docs/compare.md) from the results
shipped in results/ (bench/docgen_examples.py). docs/replay-example.md is what `bench replay --against`
printed for the shipped CSV it wrote (docs/replay-example/cache-reuse.csv, read back by bench/replay/server_report.py).
tests/test_docgen.py fails when a committed page is not what this writes, or when a setting or a column has no doc.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from bench import ROOT
from bench import docgen_examples as examples
from bench.cli import build_parser
from bench.config import BenchConfig, Group
from bench.environment import variables
from bench.json_documents import SCHEMAS
from bench.replay.server_replay import report
from bench.replay.server_report import read_csv
from bench.results import docs as results_docs

CONFIG_PAGE = ROOT / "docs" / "config.md"

CONFIG_INTRO = """\
# Configuration

<!-- Generated from bench/config.py by `python -m bench.docgen` (`make docs`): edit the model, not this page. -->

Each setting comes from the first of these that sets it, one rule for every setting:

1. the command line: the flags of `bench run` (below);
2. the environment: `AGENTBENCH_<KEY>` (`AGENTBENCH_REPS=3`, `AGENTBENCH_CTX=4096,8192`,
   `AGENTBENCH_SAMPLING='{temperature: 0}'`), or an older name kept as its alias (below: `FLINT_URL`, `JEFF_URL`,
   `GPU_DEVICE` and the other variables compose.yaml reads); the prefixed name wins over its alias, and an empty
   variable counts as unset. A variable's text is read as its setting's type asks: as it is for text, else as YAML
   reads it, and a comma list for a list;
3. `bench.yaml` (or `--config FILE`, or the file `AGENTBENCH_CONFIG` names; `experiments/` holds examples);
4. the defaults (below).

`make bench` passes its variables as flags: `CTX=`, `PRESETS=`, `AGENTS=`, `FIXTURES=`, `REPS=`, `MAX_STEPS=`,
`SANDBOX=`, `SERVERS=`, `OUT=`, `CONFIG=`, `RESUME=1`, `SHARD=`, `WORKERS=`, `GPU_DEVICES=`, `FIXTURES_ROOT=`,
given on make's command line only (`make bench CTX=4096`). One
merely exported in the shell (`export OUT=...`) changes nothing: make says it ignores it; export the prefixed name
(`AGENTBENCH_OUT`) to set a setting from the environment. make prints where each value it passes came from.

Every value is type- and range-checked when the settings load: a mistyped key or a wrong value is one line naming
where it came from, the key, the value and what is allowed (e.g. `bench.yaml: reps = '3' is not allowed: input
should be a valid integer`, `$AGENTBENCH_REPS: ...`), before anything runs. An explicit `ctx` or `presets` (flag or
variable) replaces `groups`.
"""

CONFIG_OUTRO = """\
## Presets and fixtures

**Presets** are the agent's published versions: `part2` (no clearing; a cut answer is taken as the answer),
`clearing` (clears old material past `clear_at` of the window), `part3` (clearing, and a cut answer is dropped and
the model told), `part3+` (part3 with what the article left open: clearing before a request would pass the
threshold, older done-check output cleared too, a done check planted files cannot fool), `strict` (as part3+, and
done also needs a changed non-test file and a new test), `late` (as part3+, clearing only past 3/4 of the window:
what `bench replay` found cheapest on the suite's real traces). See [agent.md](agent.md#presets).

**Fixtures**: `todo_repo` (a JSON-backed todo app; add due dates and an overdue listing, with tests; 2 of 6 hidden
tests pass on the untouched code) and `ledger_repo` (a 45K-token bookkeeping app whose small change needs more
reading than a 32K window holds; 2 of 8). `bench fixtures check` verifies every fixture against its
hidden tests and reference solution. Adding one: [fixtures.md](fixtures.md).

## Other environment variables

- `AGENTBENCH_BASE_IMAGE`: the base image of both Dockerfiles, for machines without a registry (default
  `python:3.11-slim-bookworm` for the sandbox, `debian:bookworm-slim` for the CPU llama-server).
- `LLAMA_SERVER`, `SMALL_MODEL`: another llama-server binary or GGUF file for the embedded servers.
- `MODEL_ENDPOINT` / `HF_ENDPOINT`, `HF_TOKEN`: llama.cpp's own: another hub or a mirror, a token for gated
  repositories.
- `AGENTBENCH_STATE_DIR`: where bench instances keep their state files (default `~/.cache/agent-bench/instances`).
- `AGENTBENCH_COMPOSE`: which Compose to run (`"docker compose"` or a path).
- `CI`: `true` makes a test whose real part is missing fail instead of skip.
"""


def allowed(schema: dict[str, Any]) -> str:
    """What a JSON-schema property allows, in a few words."""
    if "anyOf" in schema:
        return " or ".join(allowed(member) for member in schema["anyOf"])
    if "enum" in schema:
        return ", ".join(f"`{value}`" for value in schema["enum"])
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list of {allowed(schema.get('items', {}))}"
    if kind == "null":
        return "null"
    bounds = [f"≥ {schema['minimum']}" if "minimum" in schema else "", f"> {schema.get('exclusiveMinimum')}"]
    bounds = [bounds[0], bounds[1] if "exclusiveMinimum" in schema else ""]
    bounds.append(f"≤ {schema['maximum']}" if "maximum" in schema else "")
    bounds.append(f"`{schema['pattern']}`" if "pattern" in schema else "")
    return " ".join([str(kind), *(b for b in bounds if b)])


def run_flags() -> dict[str, str]:
    """Setting name -> the `bench run` flag that overrides it."""
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))  # noqa: SLF001
    run = commands.choices["run"]
    return {a.dest: a.option_strings[-1] for a in run._actions if a.option_strings and a.dest != "help"}  # noqa: SLF001


def one_line(text: str | None) -> str:
    return " ".join((text or "").split())


def settings_table(
    model: type[BenchConfig] | type[Group], flags: dict[str, str], environment: bool = True
) -> list[str]:
    properties = model.model_json_schema()["properties"]
    lines = ["| key | default | allowed | flag, variables | meaning |", "| --- | --- | --- | --- | --- |"]
    for name, field in model.model_fields.items():
        default = json.dumps(field.default, ensure_ascii=False) if not field.is_required() else "required"
        where = ", ".join(f"`{w}`" for w in (flags.get(name), *(variables(name) if environment else ())) if w)
        cells = [f"`{name}`", f"`{default}`", allowed(properties[name]), where, one_line(field.description)]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return lines


def render_config() -> str:
    flags = run_flags()
    out = [CONFIG_INTRO, "## Settings", "", *settings_table(BenchConfig, flags), ""]
    out += [
        "## A block of `groups`",
        "",
        one_line(Group.__doc__),
        "",
        *settings_table(Group, {}, environment=False),
        "",
    ]
    return "\n".join([*out, CONFIG_OUTRO])


JSON_PAGE = ROOT / "docs" / "json.md"
JSON_INTRO = """\
# JSON output

<!-- Generated from bench/json_documents.py by `make docs` (bench/docgen.py): edit the schemas, not this page. -->

`bench compare`, `bench history`, `bench report`, `bench fixtures check` and `bench predictions score` take `--json`:
instead of their text they print one JSON document on stdout, for scripts and CI (the exit status is the same as
without it; `report` and `history` still write their pages and figures, and the document says where). Each document
names its `command` and `schema_version`, bumped when a field changes meaning or goes away (fields may be added
without it). A value that was not measured is `null`, never 0; JSON has no infinity, so an unbounded interval end is
`null` too, and the text beside it (`interval`) says so. Below, each command's JSON Schema (draft 2020-12);
tests/test_json_documents.py validates every command's output against it.
"""


def render_json() -> str:
    out = [JSON_INTRO]
    for command, schema in SCHEMAS.items():
        out += [f"## `bench {command} --json`", "", schema["description"] + ".", "", "```json"]
        out += [json.dumps(schema, indent=2, ensure_ascii=False), "```", ""]
    return "\n".join(out)


REPLAY_PAGE = ROOT / "docs" / "replay-example.md"
REPLAY_CSV = ROOT / "docs" / "replay-example" / "cache-reuse.csv"
REPLAY_INTRO = """\
# A replay against the real CPU server: `--cache-reuse 0` and `256`

<!-- Generated from docs/replay-example/cache-reuse.csv by `python -m bench.docgen` (`make docs`): replay again to
change it. -->

Four real CPU runs (part2, clearing, part3, part3+ on todo_repo at a 1,024-token window, SmolLM2-135M forced to call
tools; tests/e2e/test_cpu_loop.py's configuration when they were recorded) sent to servers started as their Flint
was, once with `--cache-reuse 0` (their own setting) and once with `256`, on this project's 2-core machine:

```
bench replay results/runs/RUN_ID... --against embedded --server-args "--cache-reuse 0" \\
    --server-args "--cache-reuse 256" --csv docs/replay-example/cache-reuse.csv
```

What it printed (reading it: [compare.md](compare.md#sending-the-recorded-requests-to-a-server-bench-replay---against)):

"""


def render_replay_example() -> str:
    return REPLAY_INTRO + report(read_csv(REPLAY_CSV)) + "\n"


PAGES = {
    CONFIG_PAGE: render_config,
    ROOT / results_docs.PAGE: results_docs.render,
    JSON_PAGE: render_json,
    REPLAY_PAGE: render_replay_example,
    **examples.PAGES,
}


def main() -> int:
    for page, render in PAGES.items():
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(render(), encoding="utf-8")
        print(f"wrote {Path(page).relative_to(ROOT)}")
    examples.write_figures()
    print(f"wrote the figures of {examples.REPORT_DIR.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
