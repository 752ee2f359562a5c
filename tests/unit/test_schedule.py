"""The warm build loop's interval (``payledger build --every``)."""

from __future__ import annotations

import pytest

from payledger.schedule import parse_duration


@pytest.mark.parametrize(("text", "seconds"), [("90", 90.0), ("90s", 90.0), ("5m", 300.0), ("1.5h", 5400.0), (" 2m ", 120.0)])
def test_durations_read_as_seconds(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "5 minutes", "-1m", "1d", "m5", "0", "0s"])
def test_other_durations_are_refused_with_the_accepted_forms(text):
    with pytest.raises(ValueError, match=r"not a duration|more than 0"):
        parse_duration(text)
