"""The landing-table contract (schema ``payledger_raw``): column names, types and the event types.

Source: issue "The main job end to end", section "Source contract". Amounts are decimals in the
currency's major unit (landed as ``LANDED_AMOUNT_TYPE``, stored by the models as ``AMOUNT_TYPE``,
decimal(18,4)); timestamps are UTC.
"""

from __future__ import annotations

import csv

import pyarrow as pa

from payledger.spark import PROJECT_ROOT

RAW_SCHEMA = "payledger_raw"


def _seed_event_types() -> tuple[str, ...]:
    """The event types of the seed ``seeds/payment_event_types.csv`` (the one list of them, with
    each type's effect on each balance), in its order."""
    seed = PROJECT_ROOT / "seeds" / "payment_event_types.csv"
    with seed.open(newline="") as rows:
        return tuple(row["event_type"] for row in csv.DictReader(rows))


#: The event types of the fold, from the seed (``_seed_event_types``).
EVENT_TYPES: tuple[str, ...] = _seed_event_types()

#: Every amount and balance, in the currency's major unit: scale 4 holds the largest ISO 4217 minor
#: unit (CLF) exactly. The models' ``money_type()`` macro is the same type (a unit test compares).
AMOUNT_TYPE = pa.decimal128(18, 4)
#: ``AMOUNT_TYPE`` as Spark SQL writes it.
AMOUNT_DDL = f"decimal({AMOUNT_TYPE.precision},{AMOUNT_TYPE.scale})"
#: An amount as a file sends it, in the landing table: Spark's widest default decimal, so that an
#: amount with more decimals than any currency has (``1.23456`` USD) or more integer digits than
#: ``AMOUNT_TYPE`` holds lands as sent and the build rejects it with a reason (``amount_precision``,
#: ``invalid_amount``). Only a value beyond this type (19 decimals, 21 integer digits) is refused.
LANDED_AMOUNT_TYPE = pa.decimal128(38, 18)
#: ``LANDED_AMOUNT_TYPE`` as Spark SQL writes it.
LANDED_AMOUNT_DDL = f"decimal({LANDED_AMOUNT_TYPE.precision},{LANDED_AMOUNT_TYPE.scale})"
PCT_TYPE = pa.decimal128(5, 4)
TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")

#: Columns a file given to ``payledger load events`` must have (ingest columns are assigned by the loader).
EVENT_FILE_SCHEMA = pa.schema(
    [
        ("event_id", pa.string()),
        ("merchant_id", pa.string()),
        ("currency", pa.string()),
        ("event_type", pa.string()),
        ("amount", LANDED_AMOUNT_TYPE),
        ("event_time", TIMESTAMP_TYPE),
    ]
)

POLICY_FILE_SCHEMA = pa.schema(
    [
        ("segment", pa.string()),
        ("reserve_pct", PCT_TYPE),
        ("effective_from", pa.date32()),
        ("updated_at", TIMESTAMP_TYPE),
    ]
)

MERCHANT_FILE_SCHEMA = pa.schema(
    [
        ("merchant_id", pa.string()),
        ("segment", pa.string()),
        ("segment_effective_from", pa.date32()),
        ("updated_at", TIMESTAMP_TYPE),
    ]
)

#: Landing tables: name -> (Spark DDL columns, file schema, key column or None for append-only).
LANDING_TABLES: dict[str, tuple[str, pa.Schema, str | None]] = {
    "payment_events": (
        "event_id string, merchant_id string, currency string, event_type string, "
        f"amount {LANDED_AMOUNT_DDL}, event_time timestamp, ingested_at timestamp, ingest_seq bigint",
        EVENT_FILE_SCHEMA,
        None,
    ),
    "reserve_policies": (
        "segment string, reserve_pct decimal(5,4), effective_from date, updated_at timestamp",
        POLICY_FILE_SCHEMA,
        "segment",
    ),
    "merchants": (
        "merchant_id string, segment string, segment_effective_from date, updated_at timestamp",
        MERCHANT_FILE_SCHEMA,
        "merchant_id",
    ),
}

#: One row per file ``payledger load`` took (``load_log``): the deliveries. A full export whose rows
#: are all unchanged writes no landing row, yet it is a delivery: the reference sources' freshness
#: is read from here, not from ``updated_at`` (a row's own last-modified time).
LOAD_LOG = "load_log"
LOAD_LOG_COLUMNS = "table_name string, file_name string, rows_in_file bigint, rows_written bigint, loaded_at timestamp"
