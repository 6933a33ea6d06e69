"""How one metric moved between two sets of runs of one configuration: the change, its 95% interval, the exact
test's p-value and the verdict (bench.analyze.stats). infra_error runs never enter: the callers pass agent runs.

A prompt_tokens_reprocessed figure whose reprocessed_check is `mismatch`, `counter_reset` or `unchecked` was not
confirmed by the server's own counter: it is left out of medians and tests, and the cells say how many were.
Files that predate the check (the column empty) are used as they are.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from bench.analyze import stats
from bench.analyze.table import fmt_number, fmt_spread, spread
from bench.results.read import is_completed
from bench.results.row import ResultRow
from bench.results.schema import HIGHER_IS_BETTER as HIGHER_IS_BETTER  # each column's direction: the row model
from bench.results.schema import LOWER_IS_BETTER as LOWER_IS_BETTER

CHECKED_BY = {"prompt_tokens_reprocessed": "reprocessed_check"}  # metric -> the column that says it was confirmed
CONFIRMED = ("ok", "")  # "": a file from before the check existed


@dataclass(frozen=True)
class Change:
    """One metric from the old runs to the new ones."""

    text: str  # "+1.4 (+6.5%)", "-33 pp", "n/a"
    interval: str  # "-40% to +150%", "n/a"
    test: stats.Test | None  # None: not measured on both sides
    worse_by: float | None  # percent (percentage points for completed); negative when better; None: cannot tell
    old_values: Sequence[float] = ()  # what was compared (completed: 1.0 per completed run), for the power
    new_values: Sequence[float] = ()
    bounds: tuple[float, float] | None = None  # the interval as numbers (percent; pp for completed); inf: unbounded

    def verdict(self, alpha: float) -> str:
        return "not measured on both sides" if self.test is None else stats.verdict(self.test, alpha)

    def p_text(self) -> str:
        return "n/a" if self.test is None else stats.fmt_p(self.test.p)


NOT_MEASURED = Change("n/a", "n/a", None, None)


def values_of(rows: Sequence[ResultRow], metric: str) -> tuple[list[float], Counter[str]]:
    """The measured values of a metric that may be compared, and how many were left out for which check value."""
    check = CHECKED_BY.get(metric)
    left_out: Counter[str] = Counter()
    values = []
    for row in rows:
        value = row.number(metric)
        if value is None:
            continue
        if check and row.text(check) not in CONFIRMED:
            left_out[row.text(check)] += 1
        else:
            values.append(value)
    return values, left_out


def fmt_metric(rows: Sequence[ResultRow], metric: str) -> str:
    """`667 [603–667]`, with `; 1 mismatch left out` when some figures were not confirmed."""
    values, left_out = values_of(rows, metric)
    text = fmt_spread(spread(values))
    if left_out:
        text += "; " + ", ".join(f"{count} {check}" for check, count in sorted(left_out.items())) + " left out"
    return text


def metric_change(
    metric: str, old: Sequence[ResultRow], new: Sequence[ResultRow], alpha: float = stats.ALPHA
) -> Change:
    if metric == "completed":
        return completion_change(old, new, alpha)
    before, _ = values_of(old, metric)
    after, _ = values_of(new, metric)
    if not before or not after:
        return NOT_MEASURED
    old_median, new_median = spread(before).median, spread(after).median  # type: ignore[union-attr]
    delta = new_median - old_median
    if old_median != 0:
        percent = delta / abs(old_median) * 100
        text = f"{signed(delta)} ({signed(percent, '{:.1f}')}%)"
    else:
        percent = 0.0 if delta == 0 else math.copysign(math.inf, delta)
        text = f"{signed(delta)} (from 0)"
    worse_by = -percent if metric in HIGHER_IS_BETTER else percent
    interval = stats.change_interval(before, after, alpha)
    test = stats.rank_test(before, after)
    return Change(
        text=text,
        interval=interval_text(interval, "%"),
        test=test,
        worse_by=worse_by,
        old_values=before,
        new_values=after,
        bounds=interval,
    )


def interval_text(interval: tuple[float, float] | None, unit: str) -> str:
    """`+25% to +34%`; `unbounded` when the runs cannot exclude any change (too few to tell)."""
    if interval is None:
        return "n/a"
    low, high = interval
    if math.isinf(low) and math.isinf(high):
        return "unbounded (too few runs)"
    space = " " if unit == "pp" else ""
    return f"{signed(low, '{:.0f}')}{space}{unit} to {signed(high, '{:.0f}')}{space}{unit}"


def completion_change(old: Sequence[ResultRow], new: Sequence[ResultRow], alpha: float = stats.ALPHA) -> Change:
    if not old or not new:
        return NOT_MEASURED
    done_old, done_new = sum(map(is_completed, old)), sum(map(is_completed, new))
    points = (done_new / len(new) - done_old / len(old)) * 100
    test = stats.share_test(done_old, len(old), done_new, len(new))
    if test.smallest_p > alpha:
        interval = (-math.inf, math.inf)
    else:  # Newcombe's interval, reaching to 0 when Fisher's test finds no change: the two never disagree
        low, high = stats.share_change_interval(done_old, len(old), done_new, len(new))
        if not stats.significant(test, alpha):
            low, high = min(low, 0.0), max(high, 0.0)
        interval = (max(low, -100.0), min(high, 100.0))
    shares = ([float(is_completed(r)) for r in old], [float(is_completed(r)) for r in new])
    text = f"{signed(points, '{:.0f}')} pp"
    return Change(text, interval_text(interval, "pp"), test, -points, *shares, bounds=interval)


def signed(value: float, style: str = "") -> str:
    """+65, -3.5, ±0: the sign always shown; `style` formats the size (thousands separators by default)."""
    size = style.format(abs(value)) if style else fmt_number(abs(value))
    if size.strip("0.") == "":
        return "±" + size
    return ("+" if value > 0 else "-") + size
