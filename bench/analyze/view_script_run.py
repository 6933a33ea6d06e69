"""The viewer page's script, its part for one run's page (`#run=<run_id>`): the run's setup, its steps from the trace
and the request log, its tests and its diff, and the search over its steps. bench.analyze.view_script joins it to
the matrix's part; the same rule holds (every text set as text, never parsed as HTML).
"""

RUN_SCRIPT = r"""
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

"""
