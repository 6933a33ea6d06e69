"""Hidden tests for behaviour that must not change: closing-rate reports and single-currency books."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from ledger import build_balance_report, build_balance_sheet, build_trial_balance, parse_text
from ledger.cli import main
from ledger.dates import Period

HOLDINGS = """
option operating_currency CHF

P 2024-01-01 USD 0.8800 CHF
P 2024-02-01 USD 0.8600 CHF
P 2024-04-01 USD 0.9100 CHF

2024-01-03 * Opening
    Assets:Bank:CHF             5000.00 CHF
    Equity:Opening

2024-01-15 * Bank | buy dollars
    Assets:Bank:USD             1000.00 USD @ 0.8850 CHF
    Assets:Bank:CHF

2024-02-10 * Airline
    Expenses:Travel              450.00 USD
    Assets:Bank:USD

2024-04-02 * Client
    Assets:Bank:USD              300.00 USD
    Income:Consulting
"""

BAKERY = """
option operating_currency EUR

2024-01-01 * Opening
    Assets:Bank                 2500.00 EUR
    Equity:Opening

2024-01-20 * Bakery
    Expenses:Food                 12.40 EUR
    Assets:Bank

2024-01-31 * Salary
    Assets:Bank                 1800.00 EUR
    Income:Salary
"""


def test_positions_are_still_valued_at_the_closing_rate() -> None:
    journal = parse_text(HOLDINGS)
    sheet = build_balance_sheet(journal, as_of=date(2024, 4, 30))
    assets = {line.account: line.amount for line in sheet.assets}
    # 850 USD held on 2024-04-30, at that day's rate of 0.91.
    assert assets == {"Assets:Bank:CHF": Decimal("4115.00"), "Assets:Bank:USD": Decimal("773.50")}
    report = build_balance_report(journal, period=Period.until(date(2024, 4, 30)), currency="CHF", flat=True)
    lines = {line.account: line.total.quantity("CHF") for line in report.lines}
    assert lines["Assets:Bank:USD"] == Decimal("773.50")
    assert lines["Expenses:Travel"] == Decimal("409.50")


def test_single_currency_trial_balance_is_unchanged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trial = build_trial_balance(parse_text(BAKERY))
    assert trial.is_balanced and trial.total_credit == Decimal("4300.00")
    books = tmp_path / "bakery.ledger"
    books.write_text(BAKERY, encoding="utf-8")
    assert main(["-f", str(books), "trial-balance"]) == 0
    assert capsys.readouterr().out == (
        "Trial balance as of 2024-01-31, in EUR\n"
        "\n"
        "Account            Debit    Credit\n"
        "--------------  --------  --------\n"
        "Assets:Bank     4,287.60\n"
        "Equity:Opening            2,500.00\n"
        "Expenses:Food      12.40\n"
        "Income:Salary             1,800.00\n"
        "--------------  --------  --------\n"
        "Total           4,300.00  4,300.00\n"
    )
