"""Differential tests: after every build, the view equals the independent reference fold.

Hypothesis draws random histories (`tests/histories.py`): lanes of events with duplicates, late and
bad rows, policy changes with past effective dates and segment moves, landed in batches through the
real loader, with a `dbt build` after each batch (the unit tests, which read their given rows and
not the warehouse, in example 0's first build only: once per format) and a `--full-refresh` of one
incremental model before every build after the first (taking the models in turn, so that two
examples refresh each).
After every build the view equals `tests/reference.py` key by key, the rejects equal the
reference's rejects, dbt's own reconciliation tests pass (they run in the build: one rotating slice
of the keys, every key in the last build), and no snapshot version was lost or rewritten. Fixed seed; `make soak` runs the larger profile.

One test item per example (``example``), so that pytest-xdist spreads the examples over its
workers: every item draws the same examples (same seed, no database, no shrinking: the draws are
deterministic) and builds only its own. Hypothesis's first draw is its simplest (one capture a
batch in each lane, the same reference rows every batch: no replay), so the items build the draws
after it.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings

from payledger.dbt import FULL_RECONCILIATION
from payledger.warehouse import drop_project_schemas
from tests import histories
from tests.support import DATA_TESTS_SELECTION, History, Landing, assert_history_kept, snapshot_history

pytestmark = [pytest.mark.integration, pytest.mark.both_formats, pytest.mark.slow]


@pytest.fixture(scope="module")
def landing(spark, tmp_path_factory) -> Landing:
    import os
    from pathlib import Path

    return Landing(spark, tmp_path_factory.mktemp("differential"), Path(os.environ["PAYLEDGER_WAREHOUSE"]))


@pytest.mark.parametrize("example", range(histories.EXAMPLES))
def test_view_equals_the_reference_after_every_build(dbt, landing, example):
    """Example ``example`` of the drawn histories, after every build; then: hypothesis drew every
    example (no silent give-up) and this one ran in full."""
    drawn: list[int] = []
    runs: list[dict] = []

    @seed(20261122)
    @settings(
        max_examples=histories.EXAMPLES + 1,  # the simplest draw first, not built
        phases=[Phase.explicit, Phase.generate],  # no shrinking: each step is a dbt build
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(lanes=histories.lanes("d"))
    def view_equals_the_reference(lanes):
        drawn.append(len(drawn))
        if drawn[-1] != example + 1:
            return  # the simplest draw, or another item's example
        refreshes = histories.full_refresh_schedule(example)
        drop_project_schemas(landing.spark)
        history = History()
        kept = {}
        builds = 0
        for index in range(histories.BATCHES):
            batch = histories.merge_batches(lanes, index)
            if batch.policies:
                history.land_policies(landing, batch.policies)
            if batch.merchants:
                history.land_merchants(landing, batch.merchants)
            history.land_events(landing, batch.events)
            if refreshes[index]:
                dbt("run", "--select", refreshes[index], "--full-refresh", "--vars", '{"allow_full_refresh": true}')
            # Unit tests in example 0's first build; a rotating slice is reconciled in every build,
            # every key in the last (as the nightly job does).
            last = index == histories.BATCHES - 1
            dbt("build", *(DATA_TESTS_SELECTION if index or example else ()), *(FULL_RECONCILIATION if last else ()))
            builds += 1
            history.assert_view_matches(landing)
            now = snapshot_history(landing)
            assert_history_kept(kept, now)
            kept = now
        runs.append({"histories": len(lanes), "builds": builds, "events": len(history.events), "full_refreshes": [model for model in refreshes if model]})

    view_equals_the_reference()
    assert len(drawn) == histories.EXAMPLES + 1, f"hypothesis drew {len(drawn)} of {histories.EXAMPLES + 1} examples"
    assert len(runs) == 1, f"example {example} was built {len(runs)} times"
    run = runs[0]
    assert run["histories"] == histories.LANES, run
    assert run["builds"] == histories.BATCHES, run
    assert len(run["full_refreshes"]) == histories.BATCHES - 1, run
    # Over all the examples (all the items), every incremental model is refreshed once it can be.
    scheduled = {model for k in range(histories.EXAMPLES) for model in histories.full_refresh_schedule(k) if model}
    if len(histories.FULL_REFRESHABLE) <= histories.EXAMPLES * (histories.BATCHES - 1):
        assert scheduled == set(histories.FULL_REFRESHABLE), scheduled
    print(f"differential example {example}: {json.dumps(run)}")
