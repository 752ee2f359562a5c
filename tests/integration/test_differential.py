"""Differential tests: after every build, the view equals the independent reference fold.

Hypothesis draws random histories (`tests/histories.py`): lanes of events with duplicates, late and
bad rows, policy changes with past effective dates and segment moves, landed in batches through the
real loader, with a `dbt build` after each batch and now and then a `--full-refresh` of one
incremental model first. After every build the view equals `tests/reference.py` key by key, the
rejects equal the reference's rejects, dbt's own reconciliation tests pass (they run in the build),
and no snapshot version was lost or rewritten. Fixed seed; `make soak` runs the larger profile.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings

from payledger.warehouse import drop_project_schemas
from tests import histories
from tests.support import History, Landing, assert_history_kept, snapshot_history

# One worker runs this file: the second test checks what the first recorded in RUNS.
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("differential")]

RUNS: list[dict] = []


@pytest.fixture(scope="module")
def landing(spark, tmp_path_factory) -> Landing:
    import os
    from pathlib import Path

    return Landing(spark, tmp_path_factory.mktemp("differential"), Path(os.environ["PAYLEDGER_WAREHOUSE"]))


@seed(20261122)
@settings(
    max_examples=histories.EXAMPLES,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: each step is a dbt build
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
@given(lanes=histories.lanes("d"), refreshes=histories.full_refreshes())
def test_view_equals_the_reference_after_every_build(dbt, landing, lanes, refreshes):
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
    RUNS.append({"histories": len(lanes), "builds": builds, "events": len(history.events), "full_refreshes": sum(map(bool, refreshes))})


def test_differential_profile_ran_in_full(tmp_path_factory):
    """The property test above ran every example it was configured for (no silent give-up)."""
    assert len(RUNS) == histories.EXAMPLES, RUNS
    totals = {key: sum(run[key] for run in RUNS) for key in RUNS[0]}
    assert totals["histories"] >= histories.EXAMPLES * histories.LANES
    print(f"differential: {json.dumps(totals)}")
