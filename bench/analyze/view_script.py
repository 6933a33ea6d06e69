"""The viewer page's script (bench.analyze.view_page puts it in the page): hand-written, no library, no network.

It builds the page from the JSON data with DOM calls only: every text is set as a text node or an attribute value,
never parsed as HTML, so nothing a model or a tool wrote can become markup or script. `#run=<run_id>` shows one run,
`#` the matrix: groups that fold, runs tables that sort by any column (click its heading; a table draws its first
PAGE runs, "show all" the rest), filters by fixture, preset, ctx, stop reason and failure label, and a search over
every text of the page (a run's messages, tool results, tests and diff included).
"""

from bench.analyze.view_script_run import RUN_SCRIPT

SCRIPT = r"""
"use strict";
const data = JSON.parse(document.getElementById("data").textContent);
const root = document.getElementById("root");
const FOLD_TEXT = 600;
const FILTERS = [["fixture", "fixture"], ["preset", "preset"], ["ctx", "ctx"], ["stop", "stop reason"],
  ["label", "failure label"]];
const state = { query: "", filters: {} };
// A runs table draws the first PAGE of its runs that the filters leave ("show all" draws the rest): the page of
// 10,000 runs lays out 50 rows a group before its first paint, not every run (perf/viewer.py times it).
const PAGE = 50;
const views = [];  // per group: its runs table, its runs (indices into data.runs) in the table's order

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
  const count = views.reduce((total, view) => total + drawRuns(view), 0);
  document.getElementById("search-count").textContent = count + " of " + data.runs.length + " runs shown";
}

function cellText(run, column) {  // what a runs table's cell shows: file, run, then the run's cells
  return String(column === 0 ? run.file : column === 1 ? run.id : run.cells[data.run_cells[column - 2][0]]);
}

function drawRuns(view) {  // the group's runs that the filters and the search leave, in the table's order
  const left = view.order.filter((i) => shown(data.runs[i]));
  const drawn = view.all ? left : left.slice(0, PAGE);
  const body = view.table.tBodies[0];
  body.replaceChildren();
  for (const i of drawn) {
    const run = data.runs[i];
    body.append(el("tr", { "data-index": String(i) }, el("td", {}, run.file), el("td", {}, runLink(run.id)),
      ...data.run_cells.map((_, c) => el("td", { class: "num" }, cellText(run, c + 2)))));
  }
  view.section.querySelector(".shown").textContent = left.length + " of " + view.order.length + " runs shown";
  view.more.hidden = drawn.length === left.length;
  view.more.textContent = "show all " + left.length.toLocaleString("en") + " (" + drawn.length + " drawn)";
  return left.length;
}

function sortBy(view, column) {  // every run of the group sorted, not only those drawn
  const headings = view.table.querySelectorAll("thead th");
  const down = headings[column].dataset.sort === "asc";
  headings.forEach((h) => delete h.dataset.sort);
  headings[column].dataset.sort = down ? "desc" : "asc";
  const key = (i) => cellText(data.runs[i], column);
  const number = (t) => (t.trim() === "" ? NaN : Number(t.replace(/,/g, "")));
  view.order.sort((a, b) => {
    const [x, y] = [key(a), key(b)];
    const [nx, ny] = [number(x), number(y)];
    const order = !isNaN(nx) && !isNaN(ny) ? nx - ny : x.localeCompare(y);
    return down ? -order : order;
  });
  drawRuns(view);
}

function runLink(id) {
  return el("a", { href: "#run=" + encodeURIComponent(id), "data-run": id }, id);
}

function matrix() {
  root.replaceChildren(el("h1", {}, "Results: " + data.files.join(" → ")));
  root.append(el("p", { class: "note" }, "Values: median [min–max] over the agent's runs; completed = stopped " +
    "with done and every hidden test passed. Click a heading to sort a runs table (all its runs; the first " + PAGE +
    " are drawn, the rest on request); open a run for its steps."));
  if (data.unmeasured.length) root.append(el("p", { class: "note", id: "unmeasured" },
    "Not measured in any file: " + data.unmeasured.join(", ") + "."));
  root.append(controls());
  const columns = ["runs", "completed", "hidden passed", "stop reasons", ...data.metrics];
  const byGroup = new Map();
  data.runs.forEach((run, i) => {
    if (!byGroup.has(run.group)) byGroup.set(run.group, []);
    byGroup.get(run.group).push(i);
  });
  views.length = 0;
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
    const runTable = table(["file", "run", ...data.run_cells.map(([, h]) => h)], []);
    runTable.classList.add("runs");
    const view = { section, table: runTable, order: byGroup.get(group.heading) || [], all: false,
      more: el("button", { type: "button", class: "more" }) };
    view.more.addEventListener("click", () => { view.all = true; drawRuns(view); });
    runTable.querySelectorAll("thead th").forEach((th, i) => th.addEventListener("click", () => sortBy(view, i)));
    views.push(view);
    section.append(runTable, view.more);
    root.append(section);
  });
  applyFilters();
}

"""
SCRIPT += RUN_SCRIPT
SCRIPT += r"""
function route() {
  const match = location.hash.match(/^#run=(.+)$/);
  if (match) runPage(decodeURIComponent(match[1])); else matrix();
  window.scrollTo(0, 0);
  // the frame after the page was drawn, laid out and painted: what a reader waits for (perf/viewer.py times it)
  requestAnimationFrame(() => setTimeout(() => { document.body.dataset.drawn = String(performance.now()); }));
}
window.addEventListener("hashchange", route);
route();
"""
