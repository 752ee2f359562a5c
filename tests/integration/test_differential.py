"""Differential tests: after every build, the view equals the independent reference fold.

Hypothesis draws random histories (`tests/histories.py`): lanes of events with duplicates, late and
bad rows, policy changes with past effective dates and segment moves, landed in batches through the
real loader, with a `dbt build` after each batch and a `--full-refresh` of one incremental model
before every build after the first (taking the models in turn, so that two examples refresh each).
After every build the view equals `tests/reference.py` key by key, the rejects equal the
reference's rejects, dbt's own reconciliation tests pass (they run in the build), and no snapshot
version was lost or rewritten. Fixed seed; `make soak` runs the larger profile.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings

from payledger.warehouse import drop_project_schemas
from tests import histories
from tests.support import History, Landing, assert_history_kept, snapshot_history

pytestmark = [pytest.mark.integration, pytest.mark.both_formats, pytest.mark.slow]


@pytest.fixture(scope="module")
def landing(spark, tmp_path_factory) -> Landing:
    import os
    from pathlib import Path

    return Landing(spark, tmp_path_factory.mktemp("differential"), Path(os.environ["PAYLEDGER_WAREHOUSE"]))


def test_view_equals_the_reference_after_every_build(dbt, landing):
    """Every drawn history, after every build; then: the profile ran in full (no silent give-up)."""
    runs: list[dict] = []

    @seed(20261122)
    @settings(
        max_examples=histories.EXAMPLES,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: each step is a dbt build
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(lanes=histories.lanes("d"))
    def view_equals_the_reference(lanes):
        refreshes = histories.full_refresh_schedule(len(runs))
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
            dbt("build")
            builds += 1
            history.assert_view_matches(landing)
            now = snapshot_history(landing)
            assert_history_kept(kept, now)
            kept = now
        runs.append({"histories": len(lanes), "builds": builds, "events": len(history.events), "full_refreshes": [model for model in refreshes if model]})

    view_equals_the_reference()
    assert len(runs) == histories.EXAMPLES, f"hypothesis ran {len(runs)} of {histories.EXAMPLES} examples: {runs}"
    totals = {key: sum((run[key] for run in runs), [] if key == "full_refreshes" else 0) for key in runs[0]}
    assert totals["histories"] == histories.EXAMPLES * histories.LANES, totals
    assert totals["builds"] == histories.EXAMPLES * histories.BATCHES, totals
    assert len(totals["full_refreshes"]) == histories.EXAMPLES * (histories.BATCHES - 1), totals
    if len(totals["full_refreshes"]) >= len(histories.FULL_REFRESHABLE):
        assert set(totals["full_refreshes"]) == set(histories.FULL_REFRESHABLE), totals
    print(f"differential: {json.dumps(totals)}")
