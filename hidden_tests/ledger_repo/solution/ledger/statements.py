"""Financial statements: the income statement and the balance sheet.

Both show figures in one currency and with the signs people expect, not the
debit-positive signs of the journal: income, liabilities and equity appear as
positive numbers when they have their normal balance (see
``AccountType.normal_sign``).

* The income statement covers a period: what was earned and spent in it.
* The balance sheet is a snapshot: what is owned and owed at the end of a day,
  plus the earnings retained up to then.

The balance sheet values foreign-currency balances at its closing date, the
last day it covers; the income statement values each posting at its own date.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal

from .accounts import AccountType, truncate
from .amounts import MixedAmount
from .dates import Period
from .journal import Journal
from .rates import Rate
from .valuation import Valuer, closing_date, report_currency

RETAINED_EARNINGS = "Retained earnings"


@dataclass(frozen=True)
class StatementLine:
    """An account and its amount in the report currency, with the sign people read it with."""

    account: str
    amount: Decimal


def _total(lines: list[StatementLine]) -> Decimal:
    return sum((line.amount for line in lines), Decimal(0))


def _group(balances: dict[str, MixedAmount], max_depth: int | None) -> dict[str, MixedAmount]:
    """Fold accounts deeper than ``max_depth`` into their ancestor at that depth."""
    if max_depth is None:
        return balances
    grouped: dict[str, MixedAmount] = {}
    for name, balance in balances.items():
        short = truncate(name, max_depth)
        grouped[short] = grouped.get(short, MixedAmount()) + balance
    return grouped


def _lines(
    journal: Journal,
    balances: dict[str, MixedAmount],
    kind: AccountType,
    valuer: Valuer,
    on: date,
    max_depth: int | None,
) -> list[StatementLine]:
    """Statement lines for the accounts of one type, valued on ``on``; zero lines are dropped."""
    of_kind = {name: bal for name, bal in balances.items() if journal.account_type(name) is kind}
    lines = []
    for name, balance in sorted(_group(of_kind, max_depth).items()):
        amount = valuer.value_mixed(balance, on).quantity * kind.normal_sign
        if amount != 0:
            lines.append(StatementLine(name, amount))
    return lines


def _historical_lines(
    journal: Journal, values: dict[str, Decimal], kind: AccountType, max_depth: int | None
) -> list[StatementLine]:
    """Statement lines from per-account values already in the report currency; zero lines are dropped."""
    grouped: dict[str, Decimal] = {}
    for name, value in values.items():
        if journal.account_type(name) is kind:
            key = truncate(name, max_depth) if max_depth is not None else name
            grouped[key] = grouped.get(key, Decimal(0)) + value
    return [StatementLine(name, total * kind.normal_sign) for name, total in sorted(grouped.items()) if total != 0]


# -- income statement -------------------------------------------------------------------------


@dataclass
class IncomeStatement:
    """Income and expenses over ``period`` in ``currency``; both shown as positive amounts."""

    currency: str
    period: Period
    valued_on: date
    income: list[StatementLine]
    expenses: list[StatementLine]
    rates_used: list[Rate] = field(default_factory=list)

    @property
    def total_income(self) -> Decimal:
        return _total(self.income)

    @property
    def total_expenses(self) -> Decimal:
        return _total(self.expenses)

    @property
    def net_income(self) -> Decimal:
        """Income minus expenses: positive is a profit, negative a loss."""
        return self.total_income - self.total_expenses


def build_income_statement(
    journal: Journal,
    *,
    period: Period | None = None,
    currency: str | None = None,
    max_depth: int | None = None,
) -> IncomeStatement:
    """What was earned and spent during ``period`` (default: the whole journal).

    Each income or expense posting is valued at the rate in force on its own
    date: what was earned or spent is worth what it was worth on that day.
    """
    window = period or Period.all_time()
    target = report_currency(journal, currency)
    closing = closing_date(journal, window.last_day)
    valuer = Valuer(journal, target)
    flows = (AccountType.INCOME, AccountType.EXPENSE)
    # Only flows are valued: a holding without a rate must not break the income statement.
    postings = journal.postings(window, where=lambda posting: journal.account_type(posting.account) in flows)
    values = valuer.value_postings(postings)
    income = _historical_lines(journal, values, AccountType.INCOME, max_depth)
    expenses = _historical_lines(journal, values, AccountType.EXPENSE, max_depth)
    return IncomeStatement(target, window, closing, income, expenses, valuer.rates_used())


# -- balance sheet ----------------------------------------------------------------------------


@dataclass
class BalanceSheet:
    """Assets, liabilities and equity at the end of ``as_of``, in ``currency``."""

    currency: str
    as_of: date
    assets: list[StatementLine]
    liabilities: list[StatementLine]
    equity: list[StatementLine]
    # Income minus expenses from the beginning of the books up to ``as_of``.
    retained_earnings: Decimal = Decimal(0)
    rates_used: list[Rate] = field(default_factory=list)

    @property
    def total_assets(self) -> Decimal:
        return _total(self.assets)

    @property
    def total_liabilities(self) -> Decimal:
        return _total(self.liabilities)

    @property
    def total_equity(self) -> Decimal:
        """Declared equity accounts plus retained earnings."""
        return _total(self.equity) + self.retained_earnings

    @property
    def net_worth(self) -> Decimal:
        return self.total_assets - self.total_liabilities

    @property
    def imbalance(self) -> Decimal:
        """Assets minus (liabilities + equity): zero for single-currency books.

        With several currencies it is usually not zero, because balances are
        valued at the closing rate while equity was paid in at past ones; the
        renderer shows it as unrealized exchange gains or losses.
        """
        return self.total_assets - self.total_liabilities - self.total_equity


def build_balance_sheet(
    journal: Journal,
    *,
    as_of: date | None = None,
    currency: str | None = None,
    max_depth: int | None = None,
) -> BalanceSheet:
    """The position at the end of ``as_of`` (default: the journal's last day)."""
    target = report_currency(journal, currency)
    closing = closing_date(journal, as_of)
    valuer = Valuer(journal, target)
    balances = journal.balances(Period.until(closing))
    sheet = BalanceSheet(
        currency=target,
        as_of=closing,
        assets=_lines(journal, balances, AccountType.ASSET, valuer, closing, max_depth),
        liabilities=_lines(journal, balances, AccountType.LIABILITY, valuer, closing, max_depth),
        equity=_lines(journal, balances, AccountType.EQUITY, valuer, closing, max_depth),
    )
    earnings = MixedAmount()
    for name, balance in balances.items():
        if journal.account_type(name) in (AccountType.INCOME, AccountType.EXPENSE):
            earnings += balance
    # Income is a credit (negative); retained earnings are shown positive for a profit.
    sheet.retained_earnings = -valuer.value_mixed(earnings, closing).quantity
    sheet.rates_used = valuer.rates_used()
    return sheet
