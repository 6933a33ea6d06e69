"""A paired design for completion: when both sides ran the same fixtures, each fixture's run is compared with its
own counterpart (the same fixture and repetition), and only the flips count: completed before and not after, or the
other way. McNemar's exact test (a two-sided binomial test of the flips, scipy.stats.binomtest) then asks whether
the flips lean one way more than chance would, as evaluation harnesses do for two models on one set of tasks.
Pairing takes the fixtures' difficulty out of the comparison, so it can show what unpaired shares cannot.

Measured values can be paired too: `bench replay --against` sends the same requests to two server set-ups, and each
request's prompt_n or seconds under one is compared with its own under the other by Wilcoxon's signed-rank test
(scipy.stats.wilcoxon), read as compare reads its tests (bench/analyze/stats.py's alpha and p-values).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bench.analyze.stats import scipy_stats
from bench.analyze.table import KEY_COLUMNS, agent_runs, group_key
from bench.results.read import is_completed
from bench.results.row import ResultRow

# The configuration a fixture's runs belong to, fixture and its content left out: what is paired across fixtures.
ACROSS_FIXTURES = [i for i, column in enumerate(KEY_COLUMNS) if column not in ("fixture", "fixture_sha", "max_steps")]
MIN_FIXTURES = 2  # one fixture's repetitions are no pairs: they are exchangeable


@dataclass(frozen=True)
class Flips:
    """The pairs of one configuration across fixtures, and how many flipped each way."""

    pairs: int
    fixtures: int
    lost: int  # completed before, not after
    gained: int  # not before, completed after

    @property
    def p(self) -> float:
        """McNemar's exact test, two-sided: the flips as a binomial of lost + gained with p = 1/2."""
        flips = self.lost + self.gained
        return 1.0 if flips == 0 else float(scipy_stats().binomtest(self.lost, flips, 0.5).pvalue)

    @property
    def change_pp(self) -> float:
        return (self.gained - self.lost) / self.pairs * 100


def configuration(row: ResultRow) -> tuple[str, ...]:
    key = group_key(row)
    return tuple(key[i] for i in ACROSS_FIXTURES)


def paired_flips(old: Sequence[ResultRow], new: Sequence[ResultRow]) -> dict[tuple[str, ...], Flips]:
    """Per configuration that both sides ran on at least MIN_FIXTURES common fixtures: its flips."""
    before = {(configuration(r), r.fixture, r.rep): is_completed(r) for r in agent_runs(old)}
    after = {(configuration(r), r.fixture, r.rep): is_completed(r) for r in agent_runs(new)}
    found: dict[tuple[str, ...], list[tuple[str, bool, bool]]] = {}
    for key in before.keys() & after.keys():
        found.setdefault(key[0], []).append((key[1], before[key], after[key]))
    result = {}
    for config, pairs in found.items():
        fixtures = {fixture for fixture, _, _ in pairs}
        if len(fixtures) >= MIN_FIXTURES:
            lost = sum(b and not a for _, b, a in pairs)
            gained = sum(a and not b for _, b, a in pairs)
            result[config] = Flips(len(pairs), len(fixtures), lost, gained)
    return result


def describe(config: tuple[str, ...]) -> str:
    """`part3 · ctx 4096`: the configuration's preset and window (its other columns are in the headings)."""
    names = dict(zip([KEY_COLUMNS[i] for i in ACROSS_FIXTURES], config, strict=True))
    return f"{names['preset']} · ctx {names['ctx']}"


@dataclass(frozen=True)
class PairedChange:
    """One measure over pairs (the same request replayed two ways): how many moved each way, and the Wilcoxon
    signed-rank test of the differences (two-sided; pairs that did not move are left out, as the test does)."""

    pairs: int
    higher: int
    lower: int
    p: float

    @property
    def smallest_p(self) -> float:
        """The smallest two-sided p the exact test can give with this many pairs that moved: every one the same way."""
        moved = self.higher + self.lower
        return 1.0 if moved == 0 else min(1.0, 2.0 ** (1 - moved))


def signed_rank(before: Sequence[float], after: Sequence[float]) -> PairedChange:
    """Paired values, e.g. one request's prompt_n under two builds: the exact signed-rank test (scipy.stats.wilcoxon)
    while no two differences tie, scipy's normal approximation otherwise."""
    differences = [b - a for a, b in zip(before, after, strict=True)]
    higher, lower = sum(d > 0 for d in differences), sum(d < 0 for d in differences)
    if higher + lower == 0:
        return PairedChange(len(differences), 0, 0, 1.0)
    result = scipy_stats().wilcoxon(after, before, zero_method="wilcox", alternative="two-sided")
    return PairedChange(len(differences), higher, lower, min(1.0, float(result.pvalue)))


def paired_verdict(change: PairedChange, alpha: float) -> str:
    """As compare's verdicts: beyond noise, within noise, or too few pairs that moved for any test to count."""
    moved = change.higher + change.lower
    if moved == 0:
        return "no pair differs"
    if change.smallest_p > alpha:
        return f"too few pairs to tell ({moved} moved; the smallest p they allow is {change.smallest_p:.2g})"
    return "beyond noise" if change.p <= alpha else "within noise"
