"""The balance report and the trial balance.

The *balance report* shows accounts as a tree with subtotals, each in its own
commodities, or valued in one currency when asked.

The *trial balance* is the bookkeeper's check that the books add up: every
account with a balance on the report date, debit balances in one column and
credit balances in the other, both in one currency.  Since every transaction
balances, the two columns must have the same total.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal

from .accounts import ancestors, depth, is_under, truncate
from .amounts import MixedAmount
from .dates import Period
from .journal import Journal
from .rates import Rate
from .valuation import Valuer, closing_date, report_currency

# -- balance report ---------------------------------------------------------------------------


@dataclass(frozen=True)
class BalanceLine:
    """One account in a balance report."""

    account: str
    depth: int
    # Postings made directly to this account.
    own: MixedAmount
    # ``own`` plus everything below the account.
    total: MixedAmount


@dataclass
class BalanceReport:
    period: Period
    lines: list[BalanceLine]
    total: MixedAmount
    # Set when the figures were valued in one currency.
    currency: str | None = None
    valued_on: date | None = None
    rates_used: list[Rate] = field(default_factory=list)


def build_balance_report(
    journal: Journal,
    *,
    period: Period | None = None,
    account: str | None = None,
    max_depth: int | None = None,
    currency: str | None = None,
    flat: bool = False,
    show_zero: bool = False,
) -> BalanceReport:
    """Balances of the accounts with postings in ``period``.

    Args:
        account: only this account and those below it.
        max_depth: fold deeper accounts into their ancestor at this depth.
        currency: value every balance in this currency at the report's closing date.
        flat: list accounts with postings only, without the parent accounts of a tree.
        show_zero: keep accounts whose balance is zero.
    """
    window = period or Period.all_time()
    balances = journal.balances(window, account=account)
    if max_depth is not None:
        balances = _fold(balances, max_depth)
    report = BalanceReport(window, [], MixedAmount())
    if currency is not None:
        report.currency = report_currency(journal, currency)
        report.valued_on = closing_date(journal, window.last_day)
        valuer = Valuer(journal, report.currency)
        balances = {name: MixedAmount.of([valuer.value_mixed(bal, report.valued_on)]) for name, bal in balances.items()}
        report.rates_used = valuer.rates_used()
    report.lines = _flat_lines(balances) if flat else _tree_lines(balances)
    if not show_zero:
        report.lines = [line for line in report.lines if not line.total.is_zero()]
    for total in balances.values():
        report.total += total
    return report


def _fold(balances: dict[str, MixedAmount], max_depth: int) -> dict[str, MixedAmount]:
    folded: dict[str, MixedAmount] = {}
    for name, balance in balances.items():
        short = truncate(name, max_depth)
        folded[short] = folded.get(short, MixedAmount()) + balance
    return folded


def _flat_lines(balances: dict[str, MixedAmount]) -> list[BalanceLine]:
    return [BalanceLine(name, 1, bal, bal) for name, bal in sorted(balances.items())]


def _tree_lines(balances: dict[str, MixedAmount]) -> list[BalanceLine]:
    """Every account with a balance plus its ancestors, each with its subtree total."""
    names = set(balances)
    for name in balances:
        names.update(ancestors(name))
    lines = []
    for name in sorted(names):
        subtree = MixedAmount()
        for other, balance in balances.items():
            if is_under(other, name):
                subtree += balance
        lines.append(BalanceLine(name, depth(name), balances.get(name, MixedAmount()), subtree))
    return lines


# -- trial balance ----------------------------------------------------------------------------


@dataclass(frozen=True)
class TrialBalanceRow:
    """One account's balance, on the debit side (positive) or the credit side."""

    account: str
    debit: Decimal
    credit: Decimal

    @classmethod
    def for_balance(cls, account: str, balance: Decimal) -> TrialBalanceRow:
        if balance >= 0:
            return cls(account, balance, Decimal(0))
        return cls(account, Decimal(0), -balance)

    @property
    def balance(self) -> Decimal:
        return self.debit - self.credit


@dataclass
class TrialBalance:
    """All account balances on ``as_of``, in ``currency``, split into debit and credit columns."""

    currency: str
    as_of: date
    rows: list[TrialBalanceRow]
    rates_used: list[Rate] = field(default_factory=list)
    # What makes the columns equal after valuing postings at different rates and rounding each:
    # positive goes to the debit column, negative to the credit column.  Not part of ``rows``.
    conversion_difference: Decimal = Decimal(0)

    @property
    def total_debit(self) -> Decimal:
        rows = sum((row.debit for row in self.rows), Decimal(0))
        return rows + max(self.conversion_difference, Decimal(0))

    @property
    def total_credit(self) -> Decimal:
        rows = sum((row.credit for row in self.rows), Decimal(0))
        return rows + max(-self.conversion_difference, Decimal(0))

    @property
    def difference(self) -> Decimal:
        """Debits minus credits; zero for books that add up."""
        return self.total_debit - self.total_credit

    @property
    def is_balanced(self) -> bool:
        return self.difference == 0

    def row(self, account: str) -> TrialBalanceRow | None:
        return next((row for row in self.rows if row.account == account), None)


def build_trial_balance(journal: Journal, *, as_of: date | None = None, currency: str | None = None) -> TrialBalance:
    """Every account's balance at the end of ``as_of`` (default: the journal's last day).

    Postings in other commodities are valued in ``currency`` (default: the
    journal's operating currency) at the rate in force on each posting's own
    date, and rounded one by one; the gap this leaves between the columns is
    the ``conversion_difference``.  Accounts with a zero balance are left out.
    """
    target = report_currency(journal, currency)
    closing = closing_date(journal, as_of)
    valuer = Valuer(journal, target)
    totals = valuer.value_postings(journal.postings(Period.until(closing)))
    rows = [TrialBalanceRow.for_balance(account, total) for account, total in sorted(totals.items()) if total != 0]
    debits = sum((row.debit for row in rows), Decimal(0))
    credits = sum((row.credit for row in rows), Decimal(0))
    return TrialBalance(target, closing, rows, valuer.rates_used(), conversion_difference=credits - debits)
