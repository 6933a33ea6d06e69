"""The viewer page's script (bench.analyze.view_page puts it in the page): hand-written, no library, no network.

It builds the page from the JSON data with DOM calls only: every text is set as a text node or an attribute value,
never parsed as HTML, so nothing a model or a tool wrote can become markup or script. `#run=<run_id>` shows one run,
`#` the matrix: groups that fold, runs tables that sort by any column (click its heading), filters by fixture,
preset, ctx, stop reason and failure label, and a search over every text of the page (a run's messages, tool
results, tests and diff included).
"""

SCRIPT = r"""
"use strict";
const data = JSON.parse(document.getElementById("data").textContent);
const root = document.getElementById("root");
const FOLD_TEXT = 600;
const FILTERS = [["fixture", "fixture"], ["preset", "preset"], ["ctx", "ctx"], ["stop", "stop reason"],
  ["label", "failure label"]];
const state = { query: "", filters: {} };

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

function text(value, label) {
  const pre = el("pre", { class: "text" }, value);
  if (value.length <= FOLD_TEXT && value.split("\n").length <= 12) return pre;
  return el("details", { class: "fold" }, el("summary", {}, label + " (" + value.length.toLocaleString("en") +
    " characters)"), pre);
}

function facets(run) {
  return { fixture: run.fixture, preset: run.preset, ctx: run.ctx, stop: run.cells.stop_reason || "n/a",
    label: run.labels.length ? run.labels : ["none"] };
}

function strings(value, out) {
  if (typeof value === "string") out.push(value);
  else if (value && typeof value === "object") Object.values(value).forEach((v) => strings(v, out));
  return out;
}

function opened(run) {  // the run's steps, tests and diff, read from its own element when first opened or searched
  if (run.steps === undefined) Object.assign(run, JSON.parse(document.getElementById("run-" + run.part).textContent));
  return run;
}

function searchable(run) {  // every text of the run, made once, when first searched
  if (run.blob === undefined) run.blob = strings(opened(run), []).join("\n").toLowerCase();
  return run.blob;
}

function shown(run) {
  const f = facets(run);
  for (const [key, value] of Object.entries(state.filters)) {
    if (value && !(Array.isArray(f[key]) ? f[key].includes(value) : f[key] === value)) return false;
  }
  return !state.query || searchable(run).includes(state.query);
}

function controls() {
  const bar = el("div", { id: "controls" });
  const search = el("input", { id: "search", type: "search", placeholder: "search every text of the page" });
  search.value = state.query;
  search.addEventListener("input", () => { state.query = search.value.trim().toLowerCase(); applyFilters(); });
  bar.append(el("label", {}, "search ", search));
  for (const [key, name] of FILTERS) {
    const values = new Set();
    for (const run of data.runs) [].concat(facets(run)[key]).forEach((v) => values.add(String(v)));
    const select = el("select", { id: "filter-" + key }, el("option", { value: "" }, "every " + name));
    for (const v of [...values].sort()) select.append(el("option", { value: v }, v));
    select.value = state.filters[key] || "";
    select.addEventListener("change", () => { state.filters[key] = select.value; applyFilters(); });
    bar.append(select);
  }
  bar.append(el("span", { id: "search-count", class: "note" }));
  return bar;
}

function applyFilters() {
  if (location.hash.startsWith("#run=")) { filterSteps(); return; }
  let count = 0;
  for (const row of document.querySelectorAll("table.runs tbody tr")) {
    const visible = shown(data.runs[Number(row.dataset.index)]);
    row.hidden = !visible;
    count += visible;
  }
  for (const section of document.querySelectorAll("details.group")) {
    const rows = section.querySelectorAll("table.runs tbody tr");
    const visible = [...rows].filter((r) => !r.hidden).length;
    section.querySelector(".shown").textContent = visible + " of " + rows.length + " runs shown";
  }
  document.getElementById("search-count").textContent = count + " of " + data.runs.length + " runs shown";
}

function sortBy(tableNode, column) {
  const th = tableNode.querySelectorAll("thead th")[column];
  const down = th.dataset.sort === "asc";
  tableNode.querySelectorAll("thead th").forEach((h) => delete h.dataset.sort);
  th.dataset.sort = down ? "desc" : "asc";
  const key = (row) => row.children[column].textContent;
  const number = (t) => (t.trim() === "" ? NaN : Number(t.replace(/,/g, "")));
  const rows = [...tableNode.tBodies[0].rows];
  rows.sort((a, b) => {
    const [x, y] = [key(a), key(b)];
    const [nx, ny] = [number(x), number(y)];
    const order = !isNaN(nx) && !isNaN(ny) ? nx - ny : x.localeCompare(y);
    return down ? -order : order;
  });
  tableNode.tBodies[0].append(...rows);
}

function runLink(id) {
  return el("a", { href: "#run=" + encodeURIComponent(id), "data-run": id }, id);
}

function matrix() {
  root.replaceChildren(el("h1", {}, "Results: " + data.files.join(" → ")));
  root.append(el("p", { class: "note" }, "Values: median [min–max] over the agent's runs; completed = stopped " +
    "with done and every hidden test passed. Click a heading to sort a runs table; open a run for its steps."));
  if (data.unmeasured.length) root.append(el("p", { class: "note", id: "unmeasured" },
    "Not measured in any file: " + data.unmeasured.join(", ") + "."));
  root.append(controls());
  const columns = ["runs", "completed", "hidden passed", "stop reasons", ...data.metrics];
  data.groups.forEach((group, g) => {
    const section = el("details", { class: "group", "data-group": String(g), open: "" },
      el("summary", {}, el("h2", {}, group.heading), el("span", { class: "shown note" })));
    if (group.note) section.append(el("p", { class: "note" }, group.note));
    const rows = group.per_file.map((f) => [f.file, ...columns.map((c) => f.cells[c] ?? "")]);
    const matrixTable = table(["file", ...columns], rows, (i) => i > 0);
    matrixTable.classList.add("matrix");
    section.append(matrixTable);
    if (group.verdicts.length) {
      section.append(table(["files", "metric", "change", "p", "verdict"],
        group.verdicts.map((v) => [v.against, v.metric, v.change, v.p, v.verdict])));
    }
    const headers = ["file", "run", ...data.run_cells.map(([, h]) => h)];
    const runs = data.runs.map((r, i) => [r, i]).filter(([r]) => r.group === group.heading);
    const runTable = table(headers, runs.map(([r]) => [r.file, runLink(r.id),
      ...data.run_cells.map(([c]) => r.cells[c])]), (i) => i > 1);
    runTable.classList.add("runs");
    [...runTable.tBodies[0].rows].forEach((row, i) => { row.dataset.index = String(runs[i][1]); });
    runTable.querySelectorAll("thead th").forEach((th, i) => th.addEventListener("click", () => sortBy(runTable, i)));
    section.append(runTable);
    root.append(section);
  });
  applyFilters();
}

function messageView(step) {
  const box = el("div", { class: "message" }, el("span", { class: "kind model" }, "model"));
  const message = step.message;
  if (!message) {
    if (step.message_note) box.append(el("span", { class: "note" }, step.message_note));
    return box;
  }
  if (message.reasoning) box.append(el("details", { class: "reasoning" }, el("summary", {}, "reasoning (" +
    message.reasoning.length.toLocaleString("en") + " characters)"), el("pre", { class: "text" }, message.reasoning)));
  if (message.content) box.append(text(message.content, "text"));
  else if (message.tool_calls.length) box.append(el("span", { class: "note" }, "no text: the answer is its calls"));
  for (const call of message.tool_calls) {
    box.append(el("div", { class: "call" }, el("b", {}, call.name), text(call.arguments, "arguments")));
  }
  return box;
}

function itemView(item) {
  const line = el("div", { class: "item", "data-kind": item.kind }, el("span", { class: "kind " + item.kind },
    item.kind), item.summary);
  if (item.args !== undefined) {
    const label = item.label || "arguments";
    line.append(item.folded ? el("details", {}, el("summary", {}, label), el("pre", {}, item.args))
      : el("pre", {}, item.args));
  }
  if (item.jeff !== undefined) line.append(el("div", { class: "jeff" }, "Jeff: " + item.jeff));
  if (item.result !== undefined) line.append(el("div", { class: "result" }, text(item.result, "result")));
  if (item.cleared && item.cleared.length) {
    line.append(table(["message", "was", "characters", "now"], item.cleared.map((c) =>
      [String(c.message), c.what, c.before_chars + " → " + c.after_chars, c.now])));
  }
  return line;
}

function stepView(step, ctx) {
  const box = el("div", { class: "step", "data-step": String(step.step) });
  const fill = step.fill == null ? "window fill n/a" : "window " + step.fill + "% of " + ctx;
  const head = el("div", {}, el("b", {}, "step " + step.step), " · prompt " + (step.prompt_tokens ?? "n/a") +
    " tokens · " + fill);
  const width = "width:" + Math.min(step.fill, 100) * 2 + "px";
  if (step.fill != null) head.append(el("span", { class: "bar", style: width }));
  if (step.finish_reason && step.finish_reason !== "tool_calls") head.append(" · finish " + step.finish_reason);
  if (step.anew != null) head.append(" · computed anew " + step.anew + ", cached " + (step.cached ?? "n/a"));
  if (step.prefill_s != null) head.append(" · prefill " + step.prefill_s + " s, decode " + step.decode_s + " s");
  box.append(head, messageView(step));
  for (const item of step.items) {
    if (item.kind === "cut" || item.kind === "http_error") box.classList.add(item.kind);
    box.append(itemView(item));
  }
  return box;
}

function filterSteps() {
  let count = 0;
  const steps = document.querySelectorAll("#steps .step");
  steps.forEach((box) => {
    const visible = !state.query || box.textContent.toLowerCase().includes(state.query);
    box.hidden = !visible;
    count += visible;
  });
  document.getElementById("search-count").textContent = count + " of " + steps.length + " steps shown";
}

function testsView(run) {
  if (run.tests.length) {
    const outcomes = table(["session", "test", "outcome", "message"], run.tests.map((t) =>
      [t.session, t.test, el("span", { class: t.outcome }, t.outcome), t.message ? text(t.message, "message") : ""]));
    outcomes.id = "hidden";
    return outcomes;
  }
  return el("p", { class: "note" }, "Not graded: no score.json for this run.");
}

function runPage(id) {
  const found = data.runs.find((r) => r.id === id);
  if (!found) { matrix(); return; }
  const run = opened(found);
  root.replaceChildren(el("p", {}, el("a", { href: "#", id: "back" }, "← all results")));
  root.append(el("h1", {}, run.fixture + " · " + run.preset + " · ctx " + run.ctx + " · rep " + run.rep));
  root.append(el("p", { class: "note" }, run.file + " · " + run.group + " · run " + run.id));
  root.append(el("p", { id: "setup", class: "note" }, run.setup));
  for (const [id, title] of [["system", "System prompt"], ["task", "Task"]]) {
    if (run[id]) root.append(el("details", { id }, el("summary", {}, title), el("pre", {}, run[id])));
  }
  const cells = table(data.run_cells.map(([, h]) => h), [data.run_cells.map(([c]) => run.cells[c])], () => true);
  cells.id = "run-cells";
  root.append(cells);
  if (run.stop) root.append(el("p", {}, "Stopped: " + run.stop));
  if (run.error) root.append(el("p", { class: "error" }, "Error: " + run.error));
  if (run.labels.length) root.append(el("p", {}, "Failure labels: " + run.labels.join(", ")));
  const search = el("input", { id: "search", type: "search", placeholder: "search this run's steps" });
  search.value = state.query;
  search.addEventListener("input", () => { state.query = search.value.trim().toLowerCase(); filterSteps(); });
  root.append(el("div", { id: "controls" }, el("label", {}, "search ", search),
    el("span", { id: "search-count", class: "note" })));
  root.append(el("h2", {}, "Steps"));
  if (run.note) root.append(el("p", { class: "note" }, run.note));
  root.append(el("div", { id: "steps" }, ...run.steps.map((s) => stepView(s, run.ctx))));
  root.append(el("h2", {}, "Tests"));
  root.append(el("p", { id: "hidden-count" }, "hidden tests passed: " + (run.cells.hidden_passed || "n/a") + " of " +
    (run.cells.hidden_total || "n/a") + "; every graded test (hidden and visible) by its outcome:"));
  root.append(testsView(run));
  root.append(el("h2", {}, "Diff"));
  const lines = run.diff == null ? 0 : run.diff.split("\n").length;
  root.append(run.diff == null ? el("p", { class: "note" }, "No diff.patch for this run.")
    : el("details", { id: "diff" }, el("summary", {}, lines + " lines"), el("pre", {}, run.diff)));
  filterSteps();
}

function route() {
  const match = location.hash.match(/^#run=(.+)$/);
  if (match) runPage(decodeURIComponent(match[1])); else matrix();
  window.scrollTo(0, 0);
  document.body.dataset.ready = String(performance.now());
}
window.addEventListener("hashchange", route);
route();
"""
