"""The results viewer's page (bench.analyze.view): styles, script and data in one HTML file, nothing fetched.

The script builds the page from the JSON data with DOM calls (text is set as text, never parsed as HTML, so a
model's output in a trace cannot inject markup); `#run=<run_id>` shows one run's steps, `#` the matrix.
"""

from __future__ import annotations

import json
from typing import Any

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
"""

SCRIPT = r"""
"use strict";
const data = JSON.parse(document.getElementById("data").textContent);
const root = document.getElementById("root");

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
  for (const child of children) node.append(child instanceof Node ? child : String(child));
  return node;
}

function table(headers, rows, numeric) {
  const head = el("tr", {}, ...headers.map((h) => el("th", {}, h)));
  const body = rows.map((cells) => el("tr", {}, ...cells.map((c, i) =>
    c instanceof Node ? el("td", {}, c) : el("td", numeric && numeric(i) ? { class: "num" } : {}, c))));
  return el("table", {}, el("thead", {}, head), el("tbody", {}, ...body));
}

function runLink(id) {
  const link = el("a", { href: "#run=" + encodeURIComponent(id), "data-run": id }, id);
  return link;
}

function matrix() {
  root.replaceChildren(el("h1", {}, "Results: " + data.files.join(" → ")));
  root.append(el("p", { class: "note" }, "Values: median [min–max] over the agent's runs; completed = stopped " +
    "with done and every hidden test passed. Open a run for its steps."));
  if (data.unmeasured.length) root.append(el("p", { class: "note", id: "unmeasured" },
    "Not measured in any file: " + data.unmeasured.join(", ") + "."));
  const columns = ["runs", "completed", "hidden passed", "stop reasons", ...data.metrics];
  data.groups.forEach((group, g) => {
    const section = el("section", { "data-group": String(g) }, el("h2", {}, group.heading));
    if (group.note) section.append(el("p", { class: "note" }, group.note));
    const rows = group.per_file.map((f) => [f.file, ...columns.map((c) => f.cells[c] ?? "")]);
    const matrixTable = table(["file", ...columns], rows, (i) => i > 0);
    matrixTable.classList.add("matrix");
    section.append(matrixTable);
    if (group.verdicts.length) {
      section.append(table(["files", "metric", "change", "p", "verdict"],
        group.verdicts.map((v) => [v.against, v.metric, v.change, v.p, v.verdict])));
    }
    const runs = data.runs.filter((r) => r.group === group.heading);
    const headers = ["file", "run", ...data.run_cells.map(([, h]) => h)];
    const runRows = runs.map((r) => [r.file, runLink(r.id), ...data.run_cells.map(([c]) => r.cells[c])]);
    const runTable = table(headers, runRows, (i) => i > 1);
    runTable.classList.add("runs");
    section.append(runTable);
    root.append(section);
  });
}

function stepView(step, ctx) {
  const box = el("div", { class: "step", "data-step": String(step.step) });
  const fill = step.fill == null ? "window fill n/a" : "window " + step.fill + "% of " + ctx;
  const head = el("div", {}, el("b", {}, "step " + step.step), " · prompt " + (step.prompt_tokens ?? "n/a") +
    " tokens · " + fill);
  const width = "width:" + Math.min(step.fill, 100) * 2 + "px";
  if (step.fill != null) head.append(el("span", { class: "bar", style: width }));
  if (step.finish_reason && step.finish_reason !== "tool_calls") head.append(" · finish " + step.finish_reason);
  box.append(head);
  for (const item of step.items) {
    if (item.kind === "cut" || item.kind === "http_error") box.classList.add(item.kind);
    const line = el("div", { class: "item", "data-kind": item.kind }, el("span", { class: "kind " + item.kind },
      item.kind), item.summary);
    if (item.args !== undefined) {
      const label = item.label || "arguments";
      if (item.folded) line.append(el("details", {}, el("summary", {}, label), el("pre", {}, item.args)));
      else line.append(el("pre", {}, item.args));
    }
    box.append(line);
  }
  return box;
}

function runPage(id) {
  const run = data.runs.find((r) => r.id === id);
  if (!run) { matrix(); return; }
  root.replaceChildren(el("p", {}, el("a", { href: "#", id: "back" }, "← all results")));
  root.append(el("h1", {}, run.fixture + " · " + run.preset + " · ctx " + run.ctx + " · rep " + run.rep));
  root.append(el("p", { class: "note" }, run.file + " · " + run.group + " · run " + run.id));
  const cells = table(data.run_cells.map(([, h]) => h), [data.run_cells.map(([c]) => run.cells[c])], () => true);
  cells.id = "run-cells";
  root.append(cells);
  if (run.stop) root.append(el("p", {}, "Stopped: " + run.stop));
  if (run.error) root.append(el("p", { class: "error" }, "Error: " + run.error));
  if (run.labels.length) root.append(el("p", {}, "Failure labels: " + run.labels.join(", ")));
  root.append(el("h2", {}, "Steps"));
  if (run.note) root.append(el("p", { class: "note" }, run.note));
  const steps = el("div", { id: "steps" }, ...run.steps.map((s) => stepView(s, run.ctx)));
  root.append(steps);
  root.append(el("h2", {}, "Hidden tests"));
  root.append(el("p", { id: "hidden-count" }, "hidden tests passed: " + (run.cells.hidden_passed || "n/a") + " of " +
    (run.cells.hidden_total || "n/a") + "; every graded test (hidden and visible) by its outcome:"));
  if (run.hidden.length) {
    const outcomes = table(["test", "outcome"], run.hidden.map(([t, o]) => [t, el("span", { class: o }, o)]));
    outcomes.id = "hidden";
    root.append(outcomes);
  } else {
    root.append(el("p", { class: "note" }, "Not graded: no score.json for this run."));
  }
}

function route() {
  const match = location.hash.match(/^#run=(.+)$/);
  if (match) runPage(decodeURIComponent(match[1])); else matrix();
  window.scrollTo(0, 0);
}
window.addEventListener("hashchange", route);
route();
"""


def render(data: dict[str, Any]) -> str:
    """The page: JSON inside a script element (`</` escaped, so no text in it can close the element)."""
    payload = json.dumps(data, ensure_ascii=False).replace("</", "<\\/")
    title = "Results: " + " → ".join(data["files"])
    escaped_title = title.replace("&", "&amp;").replace("<", "&lt;")
    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        f"<meta http-equiv=Content-Security-Policy content=\"default-src 'none'; script-src 'unsafe-inline'; "
        f"style-src 'unsafe-inline'; img-src data:\"><title>{escaped_title}</title><style>{STYLE}</style></head>\n"
        f'<body><div id=root></div>\n<script type="application/json" id=data>{payload}</script>\n'
        f"<script>{SCRIPT}</script></body></html>\n"
    )
