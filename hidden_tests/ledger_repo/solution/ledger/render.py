"""Turning reports into text tables.

Every report is rendered the same way: a heading line, a blank line, a table
whose number columns are right-aligned so decimal points line up, and, for
valued reports, the exchange rates the figures rest on.

Numbers are shown with thousands separators and the precision of their
commodity; an empty cell means zero (trial balance columns) or "nothing here".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from .accounts import leaf
from .amounts import Amount, CommodityRegistry, MixedAmount, decimals_of, format_quantity, quantum
from .balances import BalanceReport, TrialBalance
from .budget import BudgetReport
from .lots import Disposal, Position
from .periodic import ActivityReport
from .rates import Rate
from .register import RegisterLine
from .statements import RETAINED_EARNINGS, BalanceSheet, IncomeStatement, StatementLine

GAP = "  "
INDENT = "  "
CONVERSION_DIFFERENCE = "Conversion difference"
# Computed rates (inverses, routes through a pivot) have dozens of digits; six are plenty to read.
RATE_DECIMALS_SHOWN = 6


@dataclass
class Table:
    """A plain text table; ``align`` holds ``<`` or ``>`` per column."""

    headers: list[str]
    align: list[str]
    rows: list[list[str] | None] = field(default_factory=list)

    def add(self, *cells: str) -> None:
        if len(cells) != len(self.headers):
            raise ValueError(f"row has {len(cells)} cells, table has {len(self.headers)} columns")
        self.rows.append(list(cells))

    def rule(self) -> None:
        """A separator line (drawn with dashes under each column)."""
        self.rows.append(None)

    def widths(self) -> list[int]:
        cells = [self.headers, *[row for row in self.rows if row is not None]]
        return [max(len(row[i]) for row in cells) for i in range(len(self.headers))]

    def render(self) -> list[str]:
        widths = self.widths()
        lines = [self._line(self.headers, widths), self._line(["-" * w for w in widths], widths)]
        for row in self.rows:
            lines.append(self._line(row if row is not None else ["-" * w for w in widths], widths))
        return lines

    def _line(self, cells: Sequence[str], widths: list[int]) -> str:
        padded = [
            cell.rjust(width) if how == ">" else cell.ljust(width)
            for cell, width, how in zip(cells, widths, self.align, strict=True)
        ]
        return GAP.join(padded).rstrip()


def money(value: Decimal, currency: str, registry: CommodityRegistry, *, blank_zero: bool = False) -> str:
    """A number in ``currency``'s precision with thousands separators (no commodity code)."""
    if blank_zero and value == 0:
        return ""
    return format_quantity(value, registry.precision(currency))


def mixed(amount: MixedAmount, registry: CommodityRegistry) -> list[str]:
    """One line per commodity (``1,200.00 EUR``, ``35.00 USD``), or ``0`` for nothing."""
    if amount.is_zero():
        return ["0"]
    return [registry.format(part) for part in amount.amounts()]


def rates_footer(rates: list[Rate], registry: CommodityRegistry) -> list[str]:
    """``Rates used:`` and one line per rate, or nothing when no conversion happened."""
    if not rates:
        return []
    lines = ["", "Rates used:"]
    for rate in rates:
        lines.append(f"{INDENT}{rate.day}  1 {rate.base} = {rate_text(rate.value)} {rate.quote}")
    return lines


def rate_text(value: Decimal) -> str:
    """A rate as typed (``0.92``), or cut to six decimals when it was computed (an inverse)."""
    if decimals_of(value) > RATE_DECIMALS_SHOWN:
        value = value.quantize(quantum(RATE_DECIMALS_SHOWN)).normalize()
    return format_quantity(value, 0, thousands=False)


# -- reports ----------------------------------------------------------------------------------


def render_balance(report: BalanceReport, registry: CommodityRegistry, *, tree: bool = True) -> str:
    """Accounts and balances; in tree form each name is indented under its parent."""
    table = Table(["Balance", "Account"], [">", "<"])
    for line in report.lines:
        amounts = mixed(line.total, registry)
        label = INDENT * (line.depth - 1) + leaf(line.account) if tree else line.account
        # Several commodities take several lines; the account name goes on the last one.
        for extra in amounts[:-1]:
            table.add(extra, "")
        table.add(amounts[-1], label)
    table.rule()
    totals = mixed(report.total, registry)
    for extra in totals[:-1]:
        table.add(extra, "")
    table.add(totals[-1], "Total")
    heading = f"Balances, {report.period.label()}"
    if report.currency:
        heading += f", in {report.currency} at {report.valued_on}"
    return "\n".join([heading, "", *table.render(), *rates_footer(report.rates_used, registry)]) + "\n"


def render_trial_balance(trial: TrialBalance, registry: CommodityRegistry) -> str:
    """Accounts with debit and credit columns, and the totals of both."""
    currency = trial.currency
    table = Table(["Account", "Debit", "Credit"], ["<", ">", ">"])
    for row in trial.rows:
        table.add(
            row.account,
            money(row.debit, currency, registry, blank_zero=True),
            money(row.credit, currency, registry, blank_zero=True),
        )
    difference = trial.conversion_difference
    if difference != 0:
        debit, credit = (difference, Decimal(0)) if difference > 0 else (Decimal(0), -difference)
        table.add(
            CONVERSION_DIFFERENCE,
            money(debit, currency, registry, blank_zero=True),
            money(credit, currency, registry, blank_zero=True),
        )
    table.rule()
    table.add("Total", money(trial.total_debit, currency, registry), money(trial.total_credit, currency, registry))
    heading = f"Trial balance as of {trial.as_of}, in {currency}"
    return "\n".join([heading, "", *table.render(), *rates_footer(trial.rates_used, registry)]) + "\n"


def _section(
    table: Table, title: str, lines: list[StatementLine], total: Decimal, currency: str, registry: CommodityRegistry
) -> None:
    table.add(title, "")
    for line in lines:
        table.add(INDENT + line.account, money(line.amount, currency, registry))
    table.add(f"Total {title.lower()}", money(total, currency, registry))
    table.add("", "")


def render_income_statement(statement: IncomeStatement, registry: CommodityRegistry) -> str:
    currency = statement.currency
    table = Table(["Account", currency], ["<", ">"])
    _section(table, "Income", statement.income, statement.total_income, currency, registry)
    _section(table, "Expenses", statement.expenses, statement.total_expenses, currency, registry)
    table.rule()
    table.add("Net income", money(statement.net_income, currency, registry))
    heading = f"Income statement, {statement.period.label()}, in {currency}"
    return "\n".join([heading, "", *table.render(), *rates_footer(statement.rates_used, registry)]) + "\n"


def render_balance_sheet(sheet: BalanceSheet, registry: CommodityRegistry) -> str:
    currency = sheet.currency
    table = Table(["Account", currency], ["<", ">"])
    _section(table, "Assets", sheet.assets, sheet.total_assets, currency, registry)
    _section(table, "Liabilities", sheet.liabilities, sheet.total_liabilities, currency, registry)
    equity = [*sheet.equity, StatementLine(RETAINED_EARNINGS, sheet.retained_earnings)]
    _section(table, "Equity", equity, sheet.total_equity, currency, registry)
    table.rule()
    table.add("Net worth", money(sheet.net_worth, currency, registry))
    if sheet.imbalance != 0:
        table.add("Unrealized exchange gain/loss", money(sheet.imbalance, currency, registry))
    heading = f"Balance sheet as of {sheet.as_of}, in {currency}"
    return "\n".join([heading, "", *table.render(), *rates_footer(sheet.rates_used, registry)]) + "\n"


def render_register(lines: list[RegisterLine], registry: CommodityRegistry, *, width: int = 30) -> str:
    """Date, description, account, amount and running total for each posting."""
    table = Table(["Date", "Description", "Account", "Amount", "Running total"], ["<", "<", "<", ">", ">"])
    for line in lines:
        running = mixed(line.running, registry)
        description = _clip(line.description, width)
        table.add(str(line.date), description, line.account, registry.format(line.amount), running[0])
        for extra in running[1:]:
            table.add("", "", "", "", extra)
    return "\n".join(table.render()) + "\n"


def render_budget(report: BudgetReport, registry: CommodityRegistry) -> str:
    """Actual, budget, remaining and percentage used per budgeted account."""
    currency = report.currency
    table = Table(["Account", "Actual", "Budget", "Remaining", "Used"], ["<", ">", ">", ">", ">"])
    for line in report.lines:
        used = "-" if line.used_percent is None else f"{line.used_percent}%"
        cells = [money(value, currency, registry) for value in (line.actual, line.budget, line.remaining)]
        table.add(line.account, *cells, used)
    table.rule()
    total_remaining = report.total_budget - report.total_actual
    totals = [money(value, currency, registry) for value in (report.total_actual, report.total_budget, total_remaining)]
    table.add("Total", *totals, "")
    heading = f"Budget, {report.period.label()}, in {currency}"
    return "\n".join([heading, "", *table.render(), *rates_footer(report.rates_used, registry)]) + "\n"


def render_activity(report: ActivityReport, registry: CommodityRegistry) -> str:
    """One column per period, then the total and the average per period."""
    currency = report.currency
    labels = [column.label() for column in report.columns]
    table = Table(["Account", *labels, "Total", "Average"], ["<", *[">"] * (len(labels) + 2)])
    for row in report.rows:
        figures = [money(value, currency, registry) for value in row.values]
        average = registry.round(Amount(row.average, currency)).quantity
        table.add(row.account, *figures, money(row.total, currency, registry), money(average, currency, registry))
    table.rule()
    totals = report.column_totals()
    grand = sum(totals, Decimal(0))
    average = registry.round(Amount(grand / len(totals), currency)).quantity if totals else Decimal(0)
    figures = [money(value, currency, registry) for value in totals]
    table.add("Total", *figures, money(grand, currency, registry), money(average, currency, registry))
    heading = f"Activity in {currency}"
    return "\n".join([heading, "", *table.render(), *rates_footer(report.rates_used, registry)]) + "\n"


def render_gains(disposals: list[Disposal], positions: list[Position], registry: CommodityRegistry) -> str:
    """Realized gains per sale, then open lots with their unrealized gains."""
    sold = Table(["Date", "Account", "Quantity", "Proceeds", "Cost", "Gain"], ["<", "<", ">", ">", ">", ">"])
    for sale in disposals:
        sold.add(
            str(sale.day),
            sale.account,
            f"{sale.quantity} {sale.commodity}",
            registry.format(sale.proceeds),
            registry.format(sale.cost),
            registry.format(sale.gain),
        )
    held = Table(["Acquired", "Account", "Quantity", "Cost", "Value", "Gain"], ["<", "<", ">", ">", ">", ">"])
    for position in positions:
        lot = position.lot
        held.add(
            str(lot.acquired),
            lot.account,
            f"{lot.quantity} {lot.commodity}",
            registry.format(registry.round(lot.cost)),
            registry.format(position.market_value),
            registry.format(registry.round(position.unrealized_gain)),
        )
    parts = ["Realized gains", "", *sold.render(), "", "Open lots", "", *held.render()]
    return "\n".join(parts) + "\n"


def render_rates(rates: list[Rate], registry: CommodityRegistry) -> str:
    table = Table(["Date", "Base", "Rate", "Quote"], ["<", "<", ">", "<"])
    for rate in rates:
        table.add(str(rate.day), rate.base, rate_text(rate.value), rate.quote)
    return "\n".join(table.render()) + "\n"


def _clip(text: str, width: int) -> str:
    """Shorten ``text`` to ``width`` characters, marking the cut with an ellipsis."""
    return text if len(text) <= width else text[: max(0, width - 1)] + "\u2026"
