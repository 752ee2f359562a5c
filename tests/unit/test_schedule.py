"""The warm build loop's interval (``payledger build --every``); the stale sources a scheduled
build logs."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from payledger.schedule import parse_duration, source_statuses, stale_sources


@pytest.mark.parametrize(("text", "seconds"), [("90", 90.0), ("90s", 90.0), ("5m", 300.0), ("1.5h", 5400.0), (" 2m ", 120.0)])
def test_durations_read_as_seconds(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "5 minutes", "-1m", "1d", "m5", "0", "0s"])
def test_other_durations_are_refused_with_the_accepted_forms(text):
    with pytest.raises(ValueError, match=r"not a duration|more than 0"):
        parse_duration(text)


def test_source_statuses_leave_out_the_hooks_and_the_stale_sources_are_those_not_passed():
    # What `dbt source freshness` returns: the sources' results beside the project's hooks'.
    results = {
        "operation.payledger.payledger-on-run-start-0": SimpleNamespace(status="success"),
        "source.payledger.payledger.payment_events": SimpleNamespace(status="pass"),
        "source.payledger.payledger.merchants": SimpleNamespace(status="warn"),
        "source.payledger.payledger.reserve_policies": SimpleNamespace(status="runtime error"),
        "operation.payledger.payledger-on-run-end-0": SimpleNamespace(status="success"),
    }
    assert source_statuses(results) == {
        "payledger.payment_events": "pass",
        "payledger.merchants": "warn",
        "payledger.reserve_policies": "runtime error",
    }
    assert stale_sources(results) == {"payledger.merchants": "warn", "payledger.reserve_policies": "runtime error"}
