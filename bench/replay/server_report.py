"""What `bench replay --against` prints and writes: per set-up, each run's requests against what the run recorded
(tokens computed anew, prefill and decode seconds, how many prompt_n came out equal, and where not); with two or
more set-ups, one table of each against the first, paired by request (bench/analyze/paired.py's signed-rank test,
read as compare reads its tests); and one CSV line per request and set-up, which read_csv() reads back
(docs/replay-example.md is made from one).
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

from bench.analyze.paired import paired_verdict, signed_rank
from bench.analyze.stats import ALPHA, fmt_p
from bench.analyze.table import fmt_number, markdown_table
from bench.errors import ResultsError
from bench.replay.answer_reuse import answer_reuse
from bench.replay.recorded import RecordedRequest
from bench.replay.send import Sent

Results = dict[str, list[Sent]]  # by set-up label, every run's requests in order
SHOWN_MISMATCHES = 5
CSV_COLUMNS = [
    "target",
    "run",
    "request",
    "step",
    "status",
    "recorded_status",
    "prompt_n",
    "recorded_prompt_n",
    "cache_n",
    "recorded_cache_n",
    "prompt_ms",
    "recorded_prompt_ms",
    "predicted_n",
    "recorded_predicted_n",
    "predicted_ms",
    "recorded_predicted_ms",
    "unexplained",
    "answered_otherwise",
    "error",
]
MEASURES: dict[str, Callable[[Sent], float | None]] = {
    "tokens computed anew": lambda s: s.figure("prompt_n"),
    "prompt s": lambda s: _seconds(s.figure("prompt_ms")),
    "decode s": lambda s: _seconds(s.figure("predicted_ms")),
    "model s": lambda s: _sum(_seconds(s.figure("prompt_ms")), _seconds(s.figure("predicted_ms"))),
}


def _seconds(ms: float | None) -> float | None:
    return None if ms is None else ms / 1000


def _sum(*parts: float | None) -> float | None:
    return None if any(p is None for p in parts) else sum(p for p in parts if p is not None)


def _total(values: list[float | None]) -> float | None:
    """A sum only when every value is known: a partial one would look measured and be too low."""
    return None if not values or any(v is None for v in values) else sum(v for v in values if v is not None)


def _cell(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "n/a"
    return fmt_number(round(value, digits)) if digits else fmt_number(int(value))


def _change(now: float | None, then: float | None, digits: int) -> str:
    if now is None or then is None:
        return "n/a"
    percent = f" ({100 * (now - then) / then:+.1f}%)" if then else ""
    return f"{now - then:+,.{digits}f}{percent}"


def summary_table(sent: list[Sent]) -> str:
    """Per run and in total: the requests sent, how many reproduced prompt_n, and now against then."""
    runs = list(dict.fromkeys(s.run for s in sent))
    lines = [_summary_line(run, [s for s in sent if s.run == run]) for run in runs]
    if len(runs) > 1:
        lines.append(_summary_line("total", sent))
    headers = [
        "run",
        "requests",
        "prompt_n equal",
        "tokens computed anew",
        "recorded",
        "change",
        "prompt s",
        "recorded",
        "change",
        "decode s",
        "recorded",
        "unexplained",
    ]
    return markdown_table(headers, lines)


def _summary_line(name: str, sent: list[Sent]) -> list[str]:
    answered = [s for s in sent if s.status == 200 and s.recorded.status == 200]
    checked = [s for s in answered if s.recorded.figure("prompt_n") is not None]
    equal = sum(s.figure("prompt_n") == s.recorded.figure("prompt_n") for s in checked)
    columns = []
    for name_now, digits in (("prompt_n", 0), ("prompt_ms", 2), ("predicted_ms", 2)):
        scale = 1 if name_now == "prompt_n" else 1000
        now = _total([_scaled(s.figure(name_now), scale) for s in answered])
        then = _total([_scaled(s.recorded.figure(name_now), scale) for s in answered])
        columns += [_cell(now, digits), _cell(then, digits), _change(now, then, digits)]
    unexplained = _total([None if s.unexplained is None else float(s.unexplained) for s in answered])
    return [name, str(len(sent)), f"{equal} of {len(checked)}", *columns[:6], *columns[6:8], _cell(unexplained, 0)]


def _scaled(value: float | None, scale: int) -> float | None:
    return None if value is None else value / scale


def mismatches(sent: list[Sent]) -> list[str]:
    """Where prompt_n did not come out as recorded, and why where the answer before it explains it
    (bench/replay/answer_reuse.py)."""
    lines = []
    for i, s in enumerate(sent):
        if not _differs(s):
            continue
        then = s.recorded.figure("prompt_n")
        reuse = answer_reuse(sent, i)
        why = f": {reuse.why()}" if reuse else ""
        lines.append(
            f"{s.run} request {s.recorded.number}: prompt_n {_cell(s.figure('prompt_n'), 0)}, recorded "
            f"{_cell(then, 0)}{why}"
        )
    shown = lines[:SHOWN_MISMATCHES]
    return shown + ([f"... and {len(lines) - len(shown)} more"] if len(lines) > len(shown) else [])


def by_answer(sent: list[Sent]) -> int:
    """The requests whose prompt_n differs from the recording only through the answer before them."""
    return sum(
        _differs(s) and s.figure("prompt_n") is not None and answer_reuse(sent, i) is not None
        for i, s in enumerate(sent)
    )


def _differs(s: Sent) -> bool:
    """Whether a request with a recorded prompt_n came out otherwise (or without one)."""
    then = s.recorded.figure("prompt_n")
    return then is not None and s.figure("prompt_n") != then


def paired_table(results: Results, alpha: float = ALPHA) -> str:
    """Each set-up against the first, request by request (pairs: answered in both)."""
    labels = list(results)
    base = {(s.run, s.recorded.number): s for s in results[labels[0]] if s.status == 200}
    lines = []
    for label in labels[1:]:
        pairs = [(base[key], s) for s in results[label] if (key := (s.run, s.recorded.number)) in base]
        pairs = [(a, b) for a, b in pairs if b.status == 200]
        for measure, value in MEASURES.items():
            known = [(x, y) for a, b in pairs if (x := value(a)) is not None and (y := value(b)) is not None]
            if not known:
                continue
            before, after = [x for x, _ in known], [y for _, y in known]
            change = signed_rank(before, after)
            digits = 0 if measure == "tokens computed anew" else 2
            lines.append(
                [
                    label,
                    measure,
                    str(change.pairs),
                    _cell(sum(before), digits),
                    _cell(sum(after), digits),
                    _change(sum(after), sum(before), digits),
                    f"{change.higher} / {change.lower}",
                    fmt_p(change.p),
                    paired_verdict(change, alpha),
                ]
            )
    headers = ["vs " + labels[0], "measure", "requests", "baseline", "this", "change", "higher / lower", "p", "verdict"]
    return markdown_table(headers, lines)


def write_csv(path: Path, results: Results) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(CSV_COLUMNS)
        for label, sent in results.items():
            for s in sent:
                writer.writerow(
                    [
                        label,
                        s.run,
                        s.recorded.number,
                        _text(s.recorded.step),
                        _text(s.status),
                        _text(s.recorded.status),
                        *_figures(s),
                        _text(s.unexplained),
                        _text(s.answered_otherwise),
                        s.error,
                    ]
                )


FIGURES = ("prompt_n", "cache_n", "prompt_ms", "predicted_n", "predicted_ms")


def read_csv(path: Path) -> Results:
    """A CSV write_csv() wrote, as the results it was written from (bodies and answers left out); ResultsError when a
    line is not one."""
    results: Results = {}
    with open(path, newline="", encoding="utf-8") as f:
        for number, line in enumerate(csv.DictReader(f), start=2):
            try:
                results.setdefault(line["target"], []).append(_sent(line))
            except (KeyError, ValueError) as e:
                raise ResultsError(f"{path}: line {number} is not a replay's line ({e})") from None
    return results


def _sent(line: dict[str, str]) -> Sent:
    def number(text: str) -> float | None:
        return None if text == "" else float(text)

    def whole(text: str) -> int | None:
        return None if text == "" else int(text)

    recorded = RecordedRequest(
        number=int(line["request"]),
        step=whole(line["step"]),
        body={},
        status=whole(line["recorded_status"]),
        timings={k: v for k in FIGURES if (v := number(line[f"recorded_{k}"])) is not None},
    )
    now = {k: v for k in FIGURES if (v := number(line[k])) is not None}
    otherwise = {"true": True, "false": False}.get(line["answered_otherwise"])
    return Sent(
        run=line["run"],
        recorded=recorded,
        status=whole(line["status"]),
        timings=now,
        message=None,
        completion_tokens=None,
        error=line["error"],
        unexplained=whole(line["unexplained"]),
        answered_otherwise=otherwise,
    )


def _figures(s: Sent) -> list[str]:
    out = []
    for name in FIGURES:
        out += [_text(s.figure(name)), _text(s.recorded.figure(name))]
    return out


def _text(value: object) -> str:
    """A CSV cell: empty when not measured, never 0; counts without a decimal point."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
