"""ISO 4217 minor units: the generated macro matches the pinned list."""

from __future__ import annotations

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
