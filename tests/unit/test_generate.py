"""The synthetic history generator: seeded, contract-shaped, with the faults it promises."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from payledger.contract import EVENT_FILE_SCHEMA, EVENT_TYPES, MERCHANT_FILE_SCHEMA, POLICY_FILE_SCHEMA
from payledger.generate import GenerateOptions, generate, generate_batch


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("history")
    generate(GenerateOptions(events=20_000, merchants=200, seed=7), out)
    return out


def test_files_follow_the_contract(history):
    events = pq.read_schema(history / "events.parquet")
    # The contract's columns and types; amounts as a two-decimal export writes them (the loader widens).
    assert events.names == EVENT_FILE_SCHEMA.names and events.field("amount").type == pa.decimal128(18, 2)
    assert events.remove(events.get_field_index("amount")).equals(EVENT_FILE_SCHEMA.remove(EVENT_FILE_SCHEMA.get_field_index("amount")))
    assert pq.read_schema(history / "merchants.parquet").equals(MERCHANT_FILE_SCHEMA)
    assert pq.read_schema(history / "policies.parquet").equals(POLICY_FILE_SCHEMA)


def test_same_seed_same_history(history, tmp_path):
    generate(GenerateOptions(events=20_000, merchants=200, seed=7), tmp_path)
    assert pq.read_table(tmp_path / "events.parquet").equals(pq.read_table(history / "events.parquet"))
    generate(GenerateOptions(events=20_000, merchants=200, seed=8), tmp_path / "other")
    assert not pq.read_table(tmp_path / "other" / "events.parquet").equals(pq.read_table(history / "events.parquet"))


def test_event_mix_duplicates_late_and_bad_rows(history):
    events = pq.read_table(history / "events.parquet")
    types = set(pc.unique(events["event_type"]).to_pylist())
    assert set(EVENT_TYPES) <= types, f"missing event types: {set(EVENT_TYPES) - types}"
    ids = events["event_id"].drop_null()
    assert len(ids) - len(pc.unique(ids)) >= 100, "about 1% duplicates expected"
    times = events["event_time"].drop_null().cast("int64").to_numpy()
    backwards = (times[1:] < times[:-1] - 86_400 * 1_000_000).sum()
    assert backwards > 50, "late events (older than the rows before them by a day or more) expected"
    assert pc.sum(pc.is_null(events["amount"])).as_py() > 0
    assert pc.sum(pc.less_equal(events["amount"], 0)).as_py() > 0
    assert pc.max(events["event_time"]).as_py().date().isoformat() <= "2026-11-01"


def test_batch_resends_history_events(history, tmp_path):
    generate_batch(GenerateOptions(events=2_000, merchants=200, days=3, seed=9), history / "events.parquet", tmp_path, id_prefix="b9_")
    batch = pq.read_table(tmp_path / "events.parquet")
    old = set(pq.read_table(history / "events.parquet")["event_id"].drop_null().to_pylist())
    resent = [i for i in batch["event_id"].drop_null().to_pylist() if i in old]
    assert resent, "a batch re-sends some events already in the history"


@pytest.mark.parametrize("days", [2, 365])
def test_a_history_has_the_events_asked_for_even_over_a_short_window(tmp_path, days):
    """Follow-ups past the window's end are dropped; the generator draws more captures to make up."""
    options = GenerateOptions(events=5_000, merchants=100, days=days, seed=11)
    generate(options, tmp_path)
    events = pq.read_table(tmp_path / "events.parquet")
    assert events.num_rows == options.events + int(options.events * options.duplicate_rate)


def test_bad_options_are_refused(tmp_path):
    with pytest.raises(ValueError, match="duplicate_rate"):
        generate(GenerateOptions(events=10, duplicate_rate=0.9), tmp_path)
