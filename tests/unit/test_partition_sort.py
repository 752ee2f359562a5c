"""Which days maintenance sorts again, and how it selects them (no Spark): a day whose files'
bucket ranges overlap is sorted, a sorted day is not, whatever its number of files; the predicate
selects exactly the days listed; the sort's Delta commit is maintenance, an append is not."""

from __future__ import annotations

import itertools
import random

import pytest

from payledger.formats import SORT_COMMIT_METADATA, FileRange, _delta_commit
from payledger.maintain import partition_predicate, partitions_out_of_order


def sorted_day(day: str, files: int, rng: random.Random) -> list[FileRange]:
    """A day written in bucket order into ``files`` files of consecutive, disjoint ranges."""
    cuts = sorted(rng.sample(range(1, 4095), files - 1))
    bounds = [0, *cuts, 4096]
    return [FileRange(day, low, high - 1) for low, high in itertools.pairwise(bounds)]


def test_a_sorted_day_in_any_number_of_files_is_left_alone_and_an_append_beside_it_is_sorted():
    rng = random.Random(7)
    for files in (1, 2, 5, 40):
        day = sorted_day("2026-03-01", files, rng)
        assert partitions_out_of_order(day) == [], day
        # Appends: a small batch spanning buckets, or a single bucket inside one file's range.
        for low, high in ((10, 4000), (day[-1].low, day[-1].low), (day[0].high, day[0].high)):
            assert partitions_out_of_order([*day, FileRange("2026-03-01", low, high)]) == ["2026-03-01"], (files, low, high)
        rng.shuffle(day)  # the listing's order does not matter
        assert partitions_out_of_order(day) == []


def test_files_without_a_range_are_left_out_and_each_day_is_judged_alone():
    before_the_column = FileRange("2026-03-01", None, None)
    one_append = FileRange("2026-03-01", 5, 4000)
    assert partitions_out_of_order([before_the_column, one_append]) == []
    assert partitions_out_of_order([before_the_column, one_append, FileRange("2026-03-01", 7, 9)]) == ["2026-03-01"]
    files = [FileRange("2026-03-02", 0, 4095), FileRange(None, 1, 2), FileRange(None, 2, 3), FileRange("2026-03-01", 0, 99), FileRange("2026-03-03", 100, 200)]
    files += [FileRange("2026-03-02", 4095, 4095), FileRange("2026-03-03", 0, 99)]
    assert partitions_out_of_order(files) == [None, "2026-03-02"]


def test_the_predicate_selects_the_days_listed_and_the_null_day():
    assert partition_predicate("event_date", ["2026-03-01"]) == "event_date in (date '2026-03-01')"
    assert partition_predicate("event_date", [None]) == "event_date is null"
    assert partition_predicate("event_date", [None, "2026-03-01", "+10000-01-01"]) == (
        "event_date in (date '2026-03-01', date '+10000-01-01') or event_date is null"
    )
    for bad in ([], ["2026-03-01' or true or '"], ["March 1"]):
        with pytest.raises(ValueError):
            partition_predicate("event_date", bad)


@pytest.mark.parametrize(("metadata", "kind"), [(SORT_COMMIT_METADATA, "maintenance"), (None, "append"), ("a user's note", "append")])
def test_the_sorts_delta_write_is_a_maintenance_commit_and_an_append_is_not(metadata, kind):
    row = {
        "version": 7,
        "readVersion": 6,
        "operation": "WRITE",
        "operationMetrics": {"numOutputRows": "12"},
        "operationParameters": {"mode": "Overwrite"},
        "userMetadata": metadata,
        "committed_us": 1_700_000_000_000_000,
    }
    commit = _delta_commit(row)
    assert (commit.kind, commit.rows_written) == (kind, 12)
