"""Expressing amounts in one report currency.

Reports that add up accounts holding several commodities need a single unit to
add them in: the *report currency*.  A ``Valuer`` converts amounts into it with
the journal's RateTable and rounds each result to the report currency's
precision under the journal's RoundingPolicy.

Which day's rate applies is the caller's choice; every method takes the day.
Reports of positions (balance report, balance sheet) value what they show at
their *closing date*, the last day they cover (``closing_date``); the trial
balance and the income statement value each posting at its own date
(``value_postings``).

A Valuer remembers every rate it used, so reports can print them below the
figures: a converted number is only as good as the rate behind it.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date
from decimal import Decimal, localcontext

from .amounts import Amount, MixedAmount
from .journal import Journal
from .rates import RATE_DIGITS, Rate
from .transactions import Posting


class ValuationError(ValueError):
    """A report cannot pick its currency or its valuation day."""


def report_currency(journal: Journal, requested: str | None) -> str:
    """The currency a report is shown in: the one asked for, else the journal's default."""
    if requested:
        journal.commodities.get(requested)  # rejects malformed codes early
        return requested
    default = journal.default_currency()
    if default is None:
        used = ", ".join(journal.used_commodities()) or "none"
        raise ValuationError(
            f"the journal uses several commodities ({used}); pass --currency or add "
            "'option operating_currency CODE' to the journal"
        )
    return default


def closing_date(journal: Journal, last_day: date | None) -> date:
    """The day a report values its figures at: its last day, or the journal's last posting date.

    An empty journal has nothing to value; today is as good a day as any then.
    """
    if last_day is not None:
        return last_day
    return journal.last_date() or date.today()


class Valuer:
    """Converts amounts into ``currency`` on a given day and rounds the results."""

    def __init__(self, journal: Journal, currency: str) -> None:
        self.journal = journal
        self.currency = currency
        self._used: dict[tuple[str, date], Rate] = {}

    def rate(self, commodity: str, on: date) -> Decimal:
        """How much one ``commodity`` was worth in the report currency on ``on``."""
        if commodity == self.currency:
            return Decimal(1)
        found = self.journal.rates.lookup(commodity, self.currency, on)
        self._used[(commodity, found.day)] = found
        return found.value

    def exact(self, amount: Amount, on: date) -> Decimal:
        """``amount`` in the report currency on ``on``, before rounding."""
        if amount.commodity == self.currency:
            return amount.quantity
        with localcontext() as ctx:
            ctx.prec = RATE_DIGITS
            return amount.quantity * self.rate(amount.commodity, on)

    def value(self, amount: Amount, on: date) -> Amount:
        """``amount`` in the report currency on ``on``, rounded to that currency's precision."""
        return self.journal.commodities.round(Amount(self.exact(amount, on), self.currency))

    def value_mixed(self, mixed: MixedAmount, on: date) -> Amount:
        """The sum of all components of ``mixed`` in the report currency, rounded once.

        Rounding the sum instead of each component keeps a balance of 0.004 USD
        plus 0.004 GBP from turning into two zeros that hide a visible total.
        """
        total = sum((self.exact(amount, on) for amount in mixed.amounts()), Decimal(0))
        return self.journal.commodities.round(Amount(total, self.currency))

    def value_postings(self, postings: Iterable[Posting]) -> dict[str, Decimal]:
        """Each posting valued at the rate of its own effective date, rounded, then summed per account.

        This is valuation at *historical* rates: what each movement was worth on
        the day it happened.  Rounding each posting before adding them up means
        the totals can differ by a few cents from a conversion of the sums.
        """
        totals: dict[str, Decimal] = {}
        for posting in postings:
            value = self.value(posting.require_amount(), posting.effective_date).quantity
            totals[posting.account] = totals.get(posting.account, Decimal(0)) + value
        return totals

    def rates_used(self) -> list[Rate]:
        """The rates this valuer has applied so far, by commodity and day."""
        return [self._used[key] for key in sorted(self._used)]
