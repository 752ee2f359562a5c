"""ISO 4217 minor units: the generated macro matches the pinned list."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from payledger import currencies


def test_the_models_macro_is_generated_from_the_pinned_iso_list():
    assert currencies.main(["--check"]) == 0, "run python -m payledger.currencies"
    text = currencies.MACRO_PATH.read_text()
    assert sum(text.count(f"'{code}'") for code in currencies.MINOR_UNITS) == len(currencies.MINOR_UNITS) > 150


@pytest.mark.parametrize(("code", "digits"), [("JPY", 0), ("KRW", 0), ("USD", 2), ("EUR", 2), ("KWD", 3), ("BHD", 3), ("CLF", 4)])
def test_minor_units_follow_iso_4217(code, digits):
    assert currencies.minor_unit(code) == digits


@pytest.mark.parametrize("code", ["XAU", "XDR", "XTS", "XXX", "usd", "ZZZ"])
def test_codes_without_a_numeric_minor_unit_are_not_payment_currencies(code):
    with pytest.raises(KeyError):
        currencies.minor_unit(code)


def test_the_models_money_type_is_the_contracts_amount_type():
    """``money_type()`` (every cast to money in the models) and ``contract.AMOUNT_TYPE`` (the loader's
    files, the landing tables, the readers) are one type."""
    from payledger.contract import AMOUNT_TYPE

    body = (currencies.MACRO_PATH.parent / "money_type.sql").read_text().split("-#}")[-1]
    assert re.fullmatch(r"\s*decimal\((\d+), (\d+)\)\s*\{%- endmacro %\}\s*", body), body
    assert re.findall(r"\d+", body) == [str(AMOUNT_TYPE.precision), str(AMOUNT_TYPE.scale)]
    assert AMOUNT_TYPE.scale >= max(currencies.MINOR_UNITS.values())


@pytest.mark.parametrize(
    ("amount", "currency", "shown"),
    [
        ("100.0000", "JPY", "100"),
        ("1.2350", "KWD", "1.235"),
        ("12.5000", "USD", "12.50"),
        ("-0.0000", "EUR", "0.00"),
        ("1.0000", "XYZ", "1.00"),  # no ISO minor unit: two decimals, as its holds are rounded
        ("5.5000", "JPY", "5.5000"),  # not at its minor unit: every stored digit is kept
    ],
)
def test_amounts_are_shown_with_their_currencys_minor_unit_by_either_formatter(amount, currency, shown):
    import pyarrow as pa

    from payledger.contract import AMOUNT_TYPE

    assert currencies.format_amount(Decimal(amount), currency) == shown
    assert currencies.format_amounts(pa.array([Decimal(amount), None], AMOUNT_TYPE), pa.array([currency, currency])).to_pylist() == [shown, None]


def test_the_cli_shows_money_at_each_rows_currency_and_rates_as_stored():
    """``payledger balance`` and ``explain`` output: a row's own currency wins over the document's;
    a rate (``reserve_pct``) is not money."""
    from payledger.cli import _amounts_shown

    document = {
        "currency": "KWD",
        "totals": {"available_balance": Decimal("1.2350")},
        "postings": [{"amount": Decimal("12.3450"), "reserve_pct": Decimal("0.0500")}],
        "rejects": [{"currency": "JPY", "amount": Decimal("100.5000")}, {"currency": "USD", "amount": Decimal("7.0000")}],
    }
    assert _amounts_shown(document) == {
        "currency": "KWD",
        "totals": {"available_balance": "1.235"},
        "postings": [{"amount": "12.345", "reserve_pct": Decimal("0.0500")}],
        "rejects": [{"currency": "JPY", "amount": "100.5000"}, {"currency": "USD", "amount": "7.00"}],
    }
