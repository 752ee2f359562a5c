"""Seeded synthetic PayLedger history: merchants, reserve policies and payment events as Parquet.

Everything is vectorised with NumPy so that tens of millions of events take seconds per million.
Amounts are decimals in the currency's major unit, written as decimal(18,2) as an export of these
two-decimal currencies would (the loader widens them); times are UTC.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from payledger.contract import (
    EVENT_FILE_SCHEMA,
    EVENT_TYPES,
    MERCHANT_FILE_SCHEMA,
    PCT_TYPE,
    POLICY_FILE_SCHEMA,
)

SEGMENTS: tuple[str, ...] = (
    "retail",
    "travel",
    "digital_goods",
    "gaming",
    "marketplace",
    "subscriptions",
    "food_delivery",
    "ticketing",
    "b2b_services",
    "crypto",
    "education",
    "healthcare",
)
CURRENCIES: tuple[str, ...] = ("USD", "EUR", "GBP", "CAD", "AUD")
#: Amounts in the events file: whole cents, as an export of these two-decimal currencies writes them.
FILE_AMOUNT_TYPE = pa.decimal128(18, 2)
#: The events file's schema: the contract's columns (``EVENT_FILE_SCHEMA``), amounts as ``FILE_AMOUNT_TYPE``.
GENERATED_EVENT_SCHEMA = EVENT_FILE_SCHEMA.set(EVENT_FILE_SCHEMA.get_field_index("amount"), pa.field("amount", FILE_AMOUNT_TYPE))
#: Kinds of bad row the generator writes, one per reject reason that validation can detect.
BAD_KINDS: tuple[str, ...] = (
    "missing_event_id",
    "missing_merchant_id",
    "unknown_event_type",
    "invalid_amount",
    "invalid_currency",
    "missing_event_time",
)
MICROS_PER_DAY = 86_400_000_000
EVENT_FILE = "events.parquet"
MERCHANT_FILE = "merchants.parquet"
POLICY_FILE = "policies.parquet"


@dataclass(frozen=True)
class GenerateOptions:
    """Parameters of one generated history (or of a follow-on batch with ``continue_from``).

    Rates are fractions of ``events`` (0.01 = 1%). ``end_date`` is the last day of event time.
    """

    events: int = 100_000
    merchants: int = 1_000
    segments: int = 10
    days: int = 365
    end_date: dt.date = dt.date(2026, 11, 1)
    seed: int = 42
    duplicate_rate: float = 0.01
    late_rate: float = 0.01
    bad_rate: float = 0.002
    batch_size: int = 1_000_000


def _validate(options: GenerateOptions) -> None:
    if options.events < 1 or options.merchants < 1 or options.days < 1:
        raise ValueError("events, merchants and days must be positive")
    if not 1 <= options.segments <= len(SEGMENTS):
        raise ValueError(f"segments must be between 1 and {len(SEGMENTS)}")
    for name in ("duplicate_rate", "late_rate", "bad_rate"):
        value = getattr(options, name)
        if not 0 <= value < 0.5:
            raise ValueError(f"{name} must be in [0, 0.5), got {value}")


def _epoch_micros(day: dt.date) -> int:
    return int(dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp()) * 1_000_000


def merchant_table(options: GenerateOptions) -> pa.Table:
    """Return the merchants table (contract columns; ``updated_at`` null = the loader's load time).

    Merchant ``m_000001`` ... belong to one of the first ``options.segments`` segments, effective from
    the first day of the history.
    """
    rng = np.random.default_rng([options.seed, 1])
    ids = np.char.add("m_", np.char.zfill(np.arange(1, options.merchants + 1).astype(str), 6))
    segments = np.array(SEGMENTS[: options.segments])[rng.integers(0, options.segments, options.merchants)]
    start = options.end_date - dt.timedelta(days=options.days - 1)
    return pa.table(
        {
            "merchant_id": pa.array(ids, pa.string()),
            "segment": pa.array(segments, pa.string()),
            "segment_effective_from": pa.array([start] * options.merchants, pa.date32()),
            "updated_at": pa.nulls(options.merchants, pa.timestamp("us", tz="UTC")),
        },
        schema=MERCHANT_FILE_SCHEMA,
    )


def policy_table(options: GenerateOptions) -> pa.Table:
    """Return the reserve policies: one per segment, ``reserve_pct`` between 0 and 0.15 (4 dp)."""
    rng = np.random.default_rng([options.seed, 2])
    pcts = rng.integers(0, 1500, options.segments)
    start = options.end_date - dt.timedelta(days=options.days - 1)
    return pa.table(
        {
            "segment": pa.array(SEGMENTS[: options.segments], pa.string()),
            "reserve_pct": _scaled_decimal(pcts, 4, PCT_TYPE),
            "effective_from": pa.array([start] * options.segments, pa.date32()),
            "updated_at": pa.nulls(options.segments, pa.timestamp("us", tz="UTC")),
        },
        schema=POLICY_FILE_SCHEMA,
    )


def _scaled_decimal(units: np.ndarray, scale: int, type_: pa.DataType) -> pa.Array:
    """Integers in units of 10**-scale -> a decimal array of ``type_`` (exact, no float)."""
    assert type_.scale == scale
    words = np.empty((len(units), 2), np.int64)  # decimal128 = little-endian (low, high) 64-bit words
    words[:, 0] = units
    words[:, 1] = units >> 63
    return pa.Array.from_buffers(type_, len(units), [None, pa.py_buffer(words)])


def _merchant_currencies(options: GenerateOptions, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Each merchant trades in 1 to 3 currencies; return (merchant index, currency index) pairs."""
    counts = rng.choice([1, 2, 3], size=options.merchants, p=[0.6, 0.3, 0.1])
    merchant_idx = np.repeat(np.arange(options.merchants), counts)
    first = rng.integers(0, len(CURRENCIES), options.merchants)
    offset = np.arange(len(merchant_idx)) - np.repeat(np.cumsum(counts) - counts, counts)
    currency_idx = (np.repeat(first, counts) + offset) % len(CURRENCIES)
    return merchant_idx, currency_idx


def _events_arrays(options: GenerateOptions, rng: np.random.Generator, id_prefix: str) -> dict[str, np.ndarray]:
    """Clean events in columns: captures and the lifecycle that follows them, ``options.events`` of
    them. Follow-ups that would fall after ``end_date`` are dropped; when that leaves too few (a
    window of a few days cuts off most of them), more captures are drawn."""
    keys_m, keys_c = _merchant_currencies(options, rng)
    # Busy merchants exist: key choice follows a Zipf-like weight.
    weights = 1.0 / np.arange(1, len(keys_m) + 1) ** 0.6
    weights = rng.permutation(weights / weights.sum())
    start_us = _epoch_micros(options.end_date - dt.timedelta(days=options.days - 1))
    end_us = start_us + options.days * MICROS_PER_DAY
    n_capture = max(1, int(options.events / 2.35))
    while True:  # ends: captures fall inside the window, so n_capture = options.events is enough
        k, etype, t, amt = _lifecycles(n_capture, weights, start_us, end_us, rng)
        keep = np.flatnonzero(t < end_us)
        if len(keep) >= options.events:
            break
        n_capture = min(options.events, int(n_capture * 1.1 * options.events / max(1, len(keep))) + 1)
    if len(keep) > options.events:
        keep = np.sort(rng.choice(keep, options.events, replace=False))
    n = len(keep)
    ids = np.char.add(id_prefix, np.char.zfill(np.arange(1, n + 1).astype(str), 10))
    return {
        "event_id": ids,
        "merchant": keys_m[k[keep]],
        "currency": keys_c[k[keep]],
        "event_type": etype[keep],
        "amount_cents": amt[keep],
        "event_time": t[keep],
    }


def _lifecycles(
    n_capture: int, weights: np.ndarray, start_us: int, end_us: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``n_capture`` captures in [start_us, end_us) and their follow-ups (which may fall after
    ``end_us``), as (key index, event type index, event time in epoch microseconds, amount in cents)."""
    key = rng.choice(len(weights), size=n_capture, p=weights)
    t_capture = start_us + rng.integers(0, end_us - start_us, n_capture)
    amount = np.round(np.exp(rng.normal(3.8, 1.1, n_capture)) * 100).astype(np.int64) + 100  # cents

    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    def follow(mask: np.ndarray, kind: str, lag_days: tuple[float, float], share: np.ndarray | float, base_t: np.ndarray) -> np.ndarray:
        lag = (rng.uniform(*lag_days, mask.sum()) * MICROS_PER_DAY).astype(np.int64)
        t = base_t[mask] + lag
        amt = np.maximum(1, (amount[mask] * share).astype(np.int64))
        parts.append((key[mask], np.full(mask.sum(), EVENT_TYPES.index(kind)), t, amt))
        return t

    parts.append((key, np.full(n_capture, EVENT_TYPES.index("capture_settled")), t_capture, amount))
    released = rng.random(n_capture) < 0.9
    t_release = np.zeros(n_capture, np.int64)
    t_release[released] = follow(released, "funds_released", (1, 3), 1.0, t_capture)
    reserve = released & (rng.random(n_capture) < 0.35)
    follow(reserve, "reserve_released", (20, 60), 0.05, t_release)
    payout = released & (rng.random(n_capture) < 0.75)
    follow(payout, "payout_paid", (1, 7), rng.uniform(0.5, 0.95, payout.sum()), t_release)
    refund = rng.random(n_capture) < 0.06
    follow(refund, "refund_posted", (1, 30), rng.uniform(0.1, 1.0, refund.sum()), t_capture)
    chargeback = rng.random(n_capture) < 0.02
    t_cb = np.zeros(n_capture, np.int64)
    t_cb[chargeback] = follow(chargeback, "chargeback_opened", (10, 60), 1.0, t_capture)
    outcome = rng.random(n_capture)
    follow(chargeback & (outcome < 0.45), "chargeback_won", (15, 45), 1.0, t_cb)
    follow(chargeback & (outcome >= 0.45) & (outcome < 0.85), "chargeback_lost", (15, 45), 1.0, t_cb)
    k, etype, t, amt = (np.concatenate(column) for column in zip(*parts, strict=True))
    return k, etype, t, amt


def _with_faults(options: GenerateOptions, rng: np.random.Generator, ev: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """Add duplicates (exact and conflicting), late arrival and bad rows; return columns, arrival order and bad kind."""
    n = len(ev["event_id"])
    n_dup = int(n * options.duplicate_rate)
    dup_src = rng.integers(0, n, n_dup)
    conflicting = rng.random(n_dup) < 0.2
    cols = {name: np.concatenate([values, values[dup_src]]) for name, values in ev.items()}
    cols["amount_cents"][n:][conflicting] += rng.integers(1, 1000, conflicting.sum())
    # Arrival: a few minutes after event time; late events days to weeks; duplicates after the original.
    arrival = cols["event_time"] + rng.integers(1, 600, n + n_dup) * 1_000_000
    late = rng.random(n + n_dup) < options.late_rate
    arrival[late] += (rng.uniform(2, 40, late.sum()) * MICROS_PER_DAY).astype(np.int64)
    arrival[n:] += (rng.uniform(0.01, 5, n_dup) * MICROS_PER_DAY).astype(np.int64)
    bad_kind = np.full(n + n_dup, -1)
    n_bad = int(n * options.bad_rate)
    bad_kind[rng.choice(n + n_dup, n_bad, replace=False)] = rng.integers(0, len(BAD_KINDS), n_bad)
    return cols, np.argsort(arrival, kind="stable"), bad_kind


def _event_batch(options: GenerateOptions, cols: dict[str, np.ndarray], bad_kind: np.ndarray, rows: np.ndarray, rng: np.random.Generator) -> pa.RecordBatch:
    merchant_ids = np.char.add("m_", np.char.zfill((cols["merchant"][rows] + 1).astype(str), 6))
    currency = np.array(CURRENCIES)[cols["currency"][rows]].astype(object)
    event_type = np.array(EVENT_TYPES)[cols["event_type"][rows]].astype(object)
    event_id = cols["event_id"][rows].astype(object)
    merchant_ids = merchant_ids.astype(object)
    cents = cols["amount_cents"][rows].copy()
    amount_null = np.zeros(len(rows), bool)
    time_null = np.zeros(len(rows), bool)
    kinds = bad_kind[rows]
    for i in np.flatnonzero(kinds >= 0):
        kind = BAD_KINDS[kinds[i]]
        variant = rng.integers(0, 3)
        if kind == "missing_event_id":
            event_id[i] = None if variant else ""
        elif kind == "missing_merchant_id":
            merchant_ids[i] = None if variant else " "
        elif kind == "unknown_event_type":
            event_type[i] = ("capture_pending", "FUNDS_RELEASED", None)[variant]
        elif kind == "invalid_amount":
            cents[i] = (0, -cents[i], 0)[variant]
            amount_null[i] = variant == 2
        elif kind == "invalid_currency":
            currency[i] = ("US$", "US", None)[variant]
        else:
            time_null[i] = True
    amount = _scaled_decimal(cents, 2, FILE_AMOUNT_TYPE)
    amount = pc.if_else(pa.array(amount_null), pa.scalar(None, FILE_AMOUNT_TYPE), amount)
    times = pa.array(cols["event_time"][rows], pa.timestamp("us", tz="UTC"))
    times = pc.if_else(pa.array(time_null), pa.scalar(None, times.type), times)
    return pa.record_batch(
        [
            pa.array(event_id, pa.string()),
            pa.array(merchant_ids, pa.string()),
            pa.array(currency, pa.string()),
            pa.array(event_type, pa.string()),
            amount,
            times,
        ],
        schema=GENERATED_EVENT_SCHEMA,
    )


def generate(
    options: GenerateOptions,
    out_dir: Path,
    *,
    id_prefix: str = "evt_",
    with_reference_data: bool = True,
    progress: Callable[[int], None] | None = None,
) -> dict[str, int]:
    """Write a history to ``out_dir``: ``events.parquet`` and, unless told not to, ``merchants.parquet``
    and ``policies.parquet``.

    Events are written in arrival order (the loader's ``ingest_seq`` follows file order). Returns
    ``{"events": rows written, "merchants": ..., "policies": ...}``. Raises ``ValueError`` on bad options.
    ``progress`` is called with the number of event rows written after each batch.
    """
    _validate(options)
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng([options.seed, 3])
    cols, order, bad_kind = _with_faults(options, rng, _events_arrays(options, rng, id_prefix))
    with pq.ParquetWriter(out_dir / EVENT_FILE, GENERATED_EVENT_SCHEMA) as writer:
        for start in range(0, len(order), options.batch_size):
            rows = order[start : start + options.batch_size]
            writer.write_batch(_event_batch(options, cols, bad_kind, rows, rng))
            if progress:
                progress(len(rows))
    counts = {"events": len(order)}
    if with_reference_data:
        merchants = merchant_table(options)
        policies = policy_table(options)
        pq.write_table(merchants, out_dir / MERCHANT_FILE)
        pq.write_table(policies, out_dir / POLICY_FILE)
        counts |= {"merchants": merchants.num_rows, "policies": policies.num_rows}
    return counts


def generate_batch(options: GenerateOptions, history_file: Path, out_dir: Path, *, id_prefix: str) -> dict[str, int]:
    """Write a follow-on batch of events to ``out_dir/events.parquet``: new events over the last
    ``options.days`` days plus re-sent copies (exact and conflicting duplicates) of events in
    ``history_file``, with the usual late events and bad rows. Returns ``{"events": rows written}``.
    """
    _validate(options)
    rng = np.random.default_rng([options.seed, 4])
    generate(options, out_dir, id_prefix=id_prefix, with_reference_data=False)
    fresh = pq.read_table(out_dir / EVENT_FILE)
    history = pq.read_table(history_file)
    n_resent = min(history.num_rows, max(1, int(fresh.num_rows * options.duplicate_rate)))
    resent = history.take(pa.array(rng.choice(history.num_rows, n_resent, replace=False)))
    conflicting = pa.array(rng.random(n_resent) < 0.2)
    bumped = pc.add(resent["amount"], pa.scalar(1, FILE_AMOUNT_TYPE)).cast(FILE_AMOUNT_TYPE)
    resent = resent.set_column(4, "amount", pc.if_else(conflicting, bumped, resent["amount"]))
    combined = pa.concat_tables([resent, fresh]).combine_chunks()
    pq.write_table(combined, out_dir / EVENT_FILE)
    return {"events": combined.num_rows}
