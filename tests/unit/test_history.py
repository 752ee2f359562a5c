"""Which version holds a past build's rows once retention removed old versions (pure logic of
``payledger.history.read_version``; the integration tests run it against real tables)."""

from __future__ import annotations

import datetime as dt

from payledger.formats import Commit
from payledger.history import read_version

T0 = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)


def commit(version: int, parent: int | None, kind: str) -> Commit:
    return Commit(version, parent, kind.upper(), kind, 0, 0, {}, T0 + dt.timedelta(minutes=version), {})


DELTA_LOG = [
    commit(0, None, "create"),
    commit(1, 0, "merge"),
    commit(2, 1, "maintenance"),  # OPTIMIZE
    commit(3, 2, "maintenance"),  # VACUUM START
    commit(4, 3, "merge"),
    commit(5, 4, "maintenance"),
]


def test_a_readable_version_is_read_as_itself():
    assert read_version(DELTA_LOG, {1, 2, 3, 4, 5}, 1) == 1


def test_a_removed_version_is_read_through_the_first_readable_version_after_only_maintenance():
    assert read_version(DELTA_LOG, {3, 4, 5}, 1) == 3
    assert read_version(DELTA_LOG, {5}, 4) == 5


def test_a_removed_version_followed_by_a_change_is_not_readable():
    assert read_version(DELTA_LOG, {4, 5}, 1) is None
    assert read_version(DELTA_LOG, {5}, 0) is None


def test_an_expired_iceberg_snapshot_is_found_through_its_retained_child():
    # expire_snapshots dropped 11 and 12 from the list; 13 (a rewrite) still names 12 as its parent.
    retained = [commit(13, 12, "maintenance"), commit(14, 13, "merge")]
    assert read_version(retained, {13, 14}, 12) == 13
    assert read_version(retained, {13, 14}, 11) is None
