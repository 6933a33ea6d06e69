"""Hidden tests for the requested change: historical rates and the conversion difference line."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from ledger import build_income_statement, build_trial_balance, parse_text
from ledger.cli import main

# Francs at home, dollars and yen abroad.  Rates move between the transactions.
TRIP = """
option operating_currency CHF

commodity JPY
    precision 0

P 2024-01-01 USD 0.8800 CHF
P 2024-02-01 USD 0.8600 CHF
P 2024-04-01 USD 0.9100 CHF
P 2024-01-01 JPY 0.0061 CHF
P 2024-03-01 JPY 0.0058 CHF

2024-01-03 * Opening
    Assets:Bank:CHF             5000.00 CHF
    Equity:Opening

2024-01-15 * Bank | buy dollars
    Assets:Bank:USD             1000.00 USD @ 0.8850 CHF
    Assets:Bank:CHF

2024-02-10 * Airline | flight to Tokyo
    Expenses:Travel:Flights      450.00 USD
    Assets:Bank:USD

2024-03-05 * Ryokan | two nights
    Expenses:Travel:Lodging       48000 JPY
    Liabilities:Card

2024-03-20 * Card | settled in francs
    Liabilities:Card              48000 JPY @@ 280.00 CHF
    Assets:Bank:CHF

2024-04-02 * Client | invoice paid
    Assets:Bank:USD              300.00 USD
    Income:Consulting
"""

# The bank side of the card payment settles two days after the transaction date, in a new month.
SETTLED_LATER = """
option operating_currency CHF

P 2024-01-01 USD 0.8800 CHF
P 2024-02-01 USD 0.8600 CHF

2024-01-02 * Opening
    Assets:Bank:USD             1000.00 USD @@ 880.00 CHF
    Equity:Opening              -880.00 CHF

2024-01-31 * Software subscription
    Expenses:Software            100.00 USD
    Assets:Bank:USD                            ; date: 2024-02-02
"""


def _rows(journal_text: str, as_of: date) -> dict[str, tuple[Decimal, Decimal]]:
    trial = build_trial_balance(parse_text(journal_text), as_of=as_of)
    return {row.account: (row.debit, row.credit) for row in trial.rows}


def test_trial_balance_values_each_posting_at_its_own_date() -> None:
    rows = _rows(TRIP, date(2024, 4, 30))
    # 1000 x 0.88 - 450 x 0.86 + 300 x 0.91, not 850 x 0.91.
    assert rows["Assets:Bank:USD"] == (Decimal("766.00"), Decimal(0))
    assert rows["Expenses:Travel:Flights"] == (Decimal("387.00"), Decimal(0))
    assert rows["Expenses:Travel:Lodging"] == (Decimal("278.40"), Decimal(0))
    assert rows["Income:Consulting"] == (Decimal(0), Decimal("273.00"))
    assert rows["Assets:Bank:CHF"] == (Decimal("3835.00"), Decimal(0))
    assert "Liabilities:Card" not in rows  # 48000 JPY in and out at the same March rate


def test_trial_balance_uses_the_posting_date_tag() -> None:
    rows = _rows(SETTLED_LATER, date(2024, 2, 29))
    assert rows["Expenses:Software"] == (Decimal("88.00"), Decimal(0))
    # The bank posting moved on 2024-02-02, at the February rate: 880.00 - 100 x 0.86.
    assert rows["Assets:Bank:USD"] == (Decimal("794.00"), Decimal(0))


def test_conversion_difference_makes_the_columns_equal() -> None:
    trip = build_trial_balance(parse_text(TRIP), as_of=date(2024, 4, 30))
    assert trip.conversion_difference == Decimal("6.60")
    assert trip.total_debit == trip.total_credit == Decimal("5273.00")
    assert trip.is_balanced
    assert all(row.account != "Conversion difference" for row in trip.rows)

    later = build_trial_balance(parse_text(SETTLED_LATER), as_of=date(2024, 2, 29))
    assert later.conversion_difference == Decimal("-2.00")
    assert later.total_debit == later.total_credit == Decimal("882.00")


def test_each_posting_is_rounded_with_the_journal_rounding_mode() -> None:
    stamps = """
option operating_currency EUR
option rounding {mode}

P 2024-01-01 USD 0.90 EUR

2024-01-02 Opening
    Assets:Cash:USD               1.00 USD @@ 0.90 EUR
    Equity:Opening

2024-01-05 * Post office | three stamps
    Expenses:Postage              0.05 USD
    Expenses:Postage              0.05 USD
    Expenses:Postage              0.05 USD
    Assets:Cash:USD
"""
    half_up = build_trial_balance(parse_text(stamps.format(mode="half_up")))
    half_even = build_trial_balance(parse_text(stamps.format(mode="half_even")))
    # Each 0.045 EUR is rounded on its own: up to 0.05, or to the even 0.04.
    assert half_up.row("Expenses:Postage") is not None
    assert half_up.row("Expenses:Postage").debit == Decimal("0.15")
    assert half_even.row("Expenses:Postage").debit == Decimal("0.12")
    assert half_up.row("Assets:Cash:USD").debit == Decimal("0.76")
    assert half_up.conversion_difference == Decimal("-0.01")
    assert half_even.conversion_difference == Decimal("0.02")


def test_income_statement_values_postings_at_their_own_dates() -> None:
    statement = build_income_statement(parse_text(TRIP), max_depth=2)
    assert [(line.account, line.amount) for line in statement.expenses] == [("Expenses:Travel", Decimal("665.40"))]
    assert [(line.account, line.amount) for line in statement.income] == [("Income:Consulting", Decimal("273.00"))]
    assert statement.net_income == Decimal("-392.40")


def test_cli_shows_the_conversion_difference_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    books = tmp_path / "trip.ledger"
    books.write_text(TRIP, encoding="utf-8")
    assert main(["-f", str(books), "trial-balance", "--as-of", "2024-04-30"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if line.startswith("Account"))
    index = next(i for i, line in enumerate(lines) if line.startswith("Conversion difference"))
    line = lines[index]
    assert line.split() == ["Conversion", "difference", "6.60"]
    # Right-aligned under "Debit", and the last line before the rule above the totals.
    assert line.rstrip().endswith("6.60") and len(line.rstrip()) == header.index("Debit") + len("Debit")
    assert set(lines[index + 1].replace(" ", "")) == {"-"}
    assert lines[index + 2].split() == ["Total", "5,273.00", "5,273.00"]
