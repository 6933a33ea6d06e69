"""Trial balance and income statement valued at the rate of each posting's date."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from ledger import build_balance_sheet, build_income_statement, build_trial_balance, parse_text
from ledger.cli import main

LONDON = """
option operating_currency EUR

P 2024-01-01 GBP 1.1500 EUR
P 2024-02-01 GBP 1.1700 EUR
P 2024-03-01 GBP 1.1600 EUR

2024-01-02 * Opening
    Assets:Bank:EUR             2000.00 EUR
    Equity:Opening

2024-01-08 * Exchange
    Assets:Bank:GBP              500.00 GBP @@ 580.00 EUR
    Assets:Bank:EUR

2024-02-12 * Hotel
    Expenses:Travel              200.00 GBP
    Assets:Bank:GBP

2024-03-04 * Theatre
    Expenses:Leisure              40.00 GBP
    Assets:Bank:GBP                             ; date: 2024-02-28
"""


def test_postings_are_valued_at_their_own_dates() -> None:
    trial = build_trial_balance(parse_text(LONDON), as_of=date(2024, 3, 31))
    rows = {row.account: row.balance for row in trial.rows}
    # 500 x 1.15 - 200 x 1.17 - 40 x 1.17 (the bank posting is dated 2024-02-28)
    assert rows["Assets:Bank:GBP"] == Decimal("294.20")
    assert rows["Expenses:Travel"] == Decimal("234.00")
    assert rows["Expenses:Leisure"] == Decimal("46.40")


def test_conversion_difference_closes_the_gap_between_the_columns() -> None:
    trial = build_trial_balance(parse_text(LONDON), as_of=date(2024, 3, 31))
    # Debits 1420.00 + 294.20 + 234.00 + 46.40 = 1994.60 against 2000.00 of credits.
    assert trial.conversion_difference == Decimal("5.40")
    assert trial.total_debit == trial.total_credit == Decimal("2000.00")
    assert trial.is_balanced


def test_single_currency_books_have_no_conversion_difference() -> None:
    books = "2024-01-02 Opening\n    Assets:Bank  10.00 EUR\n    Equity:Opening\n"
    trial = build_trial_balance(parse_text(books))
    assert trial.conversion_difference == 0 and trial.total_debit == Decimal("10.00")


def test_rounding_happens_per_posting() -> None:
    books = """
option operating_currency EUR
P 2024-01-01 USD 0.90 EUR
2024-01-02 Fees
    Expenses:Fees      0.05 USD
    Expenses:Fees      0.05 USD
    Assets:Cash
"""
    trial = build_trial_balance(parse_text(books))
    rows = {row.account: row.balance for row in trial.rows}
    # Each 0.045 rounds half-even to 0.04; the cash side is -0.09 for 0.10 USD.
    assert rows == {"Expenses:Fees": Decimal("0.08"), "Assets:Cash": Decimal("-0.09")}
    assert trial.conversion_difference == Decimal("0.01")


def test_income_statement_uses_posting_dates_but_balance_sheet_keeps_closing_rate() -> None:
    journal = parse_text(LONDON)
    statement = build_income_statement(journal)
    assert [(line.account, line.amount) for line in statement.expenses] == [
        ("Expenses:Leisure", Decimal("46.40")),
        ("Expenses:Travel", Decimal("234.00")),
    ]
    sheet = build_balance_sheet(journal, as_of=date(2024, 3, 31))
    assets = {line.account: line.amount for line in sheet.assets}
    assert assets["Assets:Bank:GBP"] == Decimal("301.60")  # 260 GBP at the March rate


def test_cli_prints_the_difference_before_the_totals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    books = tmp_path / "london.ledger"
    books.write_text(LONDON, encoding="utf-8")
    assert main(["-f", str(books), "trial-balance", "--as-of", "2024-03-31"]) == 0
    lines = capsys.readouterr().out.splitlines()
    total = next(i for i, line in enumerate(lines) if line.startswith("Total"))
    assert lines[total - 2].split() == ["Conversion", "difference", "5.40"]
    assert lines[total].split() == ["Total", "2,000.00", "2,000.00"]
