"""The results viewer's page (bench.analyze.view): styles, script and data in one HTML file, nothing fetched.

The script (bench.analyze.view_script) builds the page from the JSON data with DOM calls (text is set as text, never
parsed as HTML, so a model's output in a trace cannot inject markup); `#run=<run_id>` shows one run's steps, `#` the
matrix. The data sits in JSON script elements (the matrix's, and each run's steps, tests and diff in one of its own,
parsed when the run is opened or searched) with every `<` escaped, so no text in them can end the element or open
another; the page's Content-Security-Policy allows no fetch, no frame and no script but its own.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
from typing import Any, TextIO

from bench.analyze.view_script import SCRIPT

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: .5em 0 1em; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
a { color: #0645ad; cursor: pointer; }
.note { color: #666; }
.step { border-left: 4px solid #9ab; margin: .6em 0; padding: .2em .8em; }
.step.cut, .step.http_error { border-color: #c60; }
.item { margin: .15em 0; }
.kind { display: inline-block; min-width: 7.5em; font-weight: 600; }
.kind.clear { color: #06c; } .kind.cut, .kind.http_error { color: #c60; } .kind.jeff { color: #608; }
.kind.done_check { color: #080; }
.bar { display: inline-block; height: .7em; background: #9ab; vertical-align: middle; margin-left: .4em; }
pre { white-space: pre-wrap; word-break: break-all; margin: .2em 0; background: #f7f7f7; padding: .3em; }
.passed { color: #080; } .failed, .error { color: #b00; }
#controls { position: sticky; top: 0; background: #fff; padding: .4em 0; border-bottom: 1px solid #ddd; z-index: 1; }
#controls select, #controls input { margin-right: .6em; } #search { width: 22em; }
details.group > summary { cursor: pointer; } details.group > summary h2 { display: inline; margin-right: .6em; }
th { cursor: pointer; } th[data-sort=asc]::after { content: " ▲"; } th[data-sort=desc]::after { content: " ▼"; }
.message { margin: .3em 0 .3em 1em; } .kind.model { color: #a50; } .call { margin-left: 1em; }
.jeff { color: #608; margin-left: 1em; } .result { margin-left: 1em; } pre.text { max-height: 40em; overflow: auto; }
"""


# A run's parts read only when the run is opened or searched: each run's in an element of its own, so the page of
# 10,000 runs parses one small document before it draws the matrix, not every trace (bench.analyze.view_script).
OPENED = ("system", "task", "steps", "tests", "diff")


def render(data: dict[str, Any]) -> str:
    """The page as one string (write_page writes it piece by piece)."""
    out = io.StringIO()
    write_page(data, out)
    return out.getvalue()


def write_page(data: dict[str, Any], out: TextIO) -> None:
    """The page: JSON inside script elements (every `<` escaped as \\u003c: no text in them can close the element),
    and a policy that runs only the page's own script (by its hash): no inline handler, no other script element.
    `data["runs"]` is written one run at a time, each run's page made as it is written (a sequence may make its items
    when asked: bench.analyze.view.RunPages), its OPENED parts in an element of its own (`run-<n>`, n its place in
    the matrix's runs), so the page of 10,000 runs is never whole in memory."""
    title = "Results: " + " → ".join(data["files"])
    escaped_title = title.replace("&", "&amp;").replace("<", "&lt;")
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode("ascii")
    policy = f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; img-src data:"
    out.write(
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        f'<meta http-equiv=Content-Security-Policy content="{policy}"><title>{escaped_title}</title>'
        f"<style>{STYLE}</style></head>\n<body><div id=root></div>\n"
    )
    matrix = []  # each run's own cells and names (hundreds of bytes), for the matrix the page draws first
    for number, run in enumerate(data["runs"]):
        out.write(f'<script type="application/json" id=run-{number}>{_json(_opened(run))}</script>\n')
        matrix.append({key: value for key, value in run.items() if key not in OPENED} | {"part": number})
    rest = {key: value for key, value in data.items() if key != "runs"}
    out.write(f'<script type="application/json" id=data>{_json(rest | {"runs": matrix})}</script>\n')
    out.write(f"<script>{SCRIPT}</script></body></html>\n")


def _opened(run: dict[str, Any]) -> dict[str, Any]:
    return {key: run[key] for key in OPENED if key in run}


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False).replace("<", "\\u003c")
