"""Hypothesis strategies for random PayLedger histories, and the sizes of the reliability runs.

A *lane* is one independent history: its own merchants, segments and event ids (all prefixed with the
lane's name), its initial reference data and a list of batches. Lanes never share a key, so several
lanes land into one warehouse and are built together, and the reference fold of their union is the
union of their folds. Each batch holds events (the whole event mix, exact and conflicting duplicates,
late and out-of-order events, every kind of bad row), policy changes with past effective dates,
segment moves. `full_refresh_schedule` gives each example (all its lanes) a `--full-refresh` of an
incremental model before every build after the first.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, field
from decimal import Decimal

from hypothesis import strategies as st

from tests.reference import EVENT_TYPES

SOAK = os.environ.get("PAYLEDGER_SOAK") == "1"
# `make test` (fixed seeds) and `make soak`: examples x lanes histories, each with BATCHES builds.
# PAYLEDGER_EXAMPLES and PAYLEDGER_KILLS override the counts (make test builds the first
# PAYLEDGER_ICEBERG_EXAMPLES of them on Iceberg, default 1: tests/conftest.py).
# Two examples of 14 lanes (28 histories, 6 builds) refresh each of the 4 incremental models once.
EXAMPLES = int(os.environ.get("PAYLEDGER_EXAMPLES", 12 if SOAK else 2))
LANES = 25 if SOAK else 14
BATCHES = 3
KILLS = int(os.environ.get("PAYLEDGER_KILLS", 50 if SOAK else 4))
# The maintenance test re-sends an event of its history's first day after this many later builds
# (scheduled builds, maintenance when due), in the build after them: at least 1
# (PAYLEDGER_LATER_BUILDS overrides).
LATER_BUILDS = int(os.environ.get("PAYLEDGER_LATER_BUILDS", 100 if SOAK else 1))
if LATER_BUILDS < 1:
    raise ValueError(f"PAYLEDGER_LATER_BUILDS must be at least 1, not {LATER_BUILDS}")

START = dt.date(2026, 1, 1)
DAYS = 90
FULL_REFRESHABLE = (
    "int_payment_events_classified",
    "int_merchant_daily_balances",
    "payment_event_rejects",
    "merchant_balance_current",
)


@dataclass
class Batch:
    """What lands between two builds (rows as `tests.support` builds them)."""

    events: list[dict] = field(default_factory=list)
    policies: list[dict] = field(default_factory=list)
    merchants: list[dict] = field(default_factory=list)


def _day(offset: int) -> dt.date:
    return START + dt.timedelta(days=offset)


def _chance(draw, numerator: int, denominator: int) -> bool:
    return draw(st.integers(1, denominator)) <= numerator


def _mostly(valid: st.SearchStrategy, invalid: st.SearchStrategy, one_in: int = 6) -> st.SearchStrategy:
    """``valid`` but in about one draw of ``one_in``, where ``invalid``. ``st.one_of`` would draw
    each half the time: with three fields drawn so, most events had one bad and the few valid
    releases left rarely met a segment move's or a policy change's days."""
    return st.integers(1, one_in).flatmap(lambda k: invalid if k == one_in else valid)


@st.composite
def lane(draw, name: str, batches: int = BATCHES) -> list[Batch]:
    """One history: ``batches`` batches; the first also carries the initial reference data."""
    merchants = [f"{name}m{i}" for i in range(draw(st.integers(1, 3)))]
    segments = [f"{name}s{i}" for i in range(2)]
    pct = st.decimals(min_value=0, max_value=Decimal("0.5"), places=4)
    day = st.integers(0, DAYS - 1)
    amount = st.one_of(
        st.decimals(min_value=Decimal("0.01"), max_value=Decimal("500.00"), places=2),
        st.integers(1, 500).map(Decimal),  # whole amounts: valid in JPY too (no minor unit)
        # Three decimals: valid in KWD and BHD only (amount_precision elsewhere); their holds round
        # to three decimals, where half up and half even differ more often than at two.
        st.decimals(min_value=Decimal("0.001"), max_value=Decimal("50.000"), places=3),
        st.sampled_from([None, Decimal("0.00"), Decimal("-1.00")]),
    )
    event_time = _mostly(
        st.builds(
            lambda d, s: dt.datetime.combine(_day(d), dt.time(), tzinfo=dt.UTC) + dt.timedelta(seconds=s),
            day,
            st.integers(0, 86_399),
        ),
        st.just(None),
    )
    fresh_event = st.fixed_dictionaries(
        {
            "event_id": _mostly(st.integers(0, 7).map(lambda k: f"{name}e{k}"), st.sampled_from([None, " "])),
            "merchant_id": _mostly(st.sampled_from(merchants), st.sampled_from([None, ""])),
            # JPY has no minor unit (cents are amount_precision), KWD and BHD three; XYZ is not ISO 4217.
            "currency": st.sampled_from(["USD", "USD", "EUR", "JPY", "KWD", "BHD", "XYZ", "usd", None]),
            # Captures and releases weighted up, so that holds are common; capture_pending is unknown.
            "event_type": st.sampled_from(sorted(EVENT_TYPES) + ["capture_settled", "funds_released"] * 2 + ["capture_pending"]),
            "amount": amount,
            "event_time": event_time,
        }
    )

    sent: list[dict] = []
    history = []
    for index in range(batches):
        batch = Batch()
        for _ in range(draw(st.integers(1, 6))):
            if sent and draw(st.integers(0, 5)) == 0:
                batch.events.append(dict(draw(st.sampled_from(sent))))  # exact re-send
            else:
                batch.events.append(draw(fresh_event))
            sent.append(batch.events[-1])
        initial = index == 0
        # Initially most segments get a policy and most merchants a segment; later, some change.
        for segment in segments:
            if _chance(draw, 3, 4) if initial else _chance(draw, 1, 7):
                batch.policies.append({"segment": segment, "reserve_pct": draw(pct), "effective_from": _day(draw(day))})
        for merchant_id in merchants:
            if _chance(draw, 3, 4) if initial else _chance(draw, 1, 7):
                batch.merchants.append({"merchant_id": merchant_id, "segment": draw(st.sampled_from(segments)), "segment_effective_from": _day(draw(day))})
        history.append(batch)
    return history


@st.composite
def lanes(draw, prefix: str, count: int = LANES, batches: int = BATCHES) -> list[list[Batch]]:
    """``count`` independent lanes named ``<prefix>h<i>-``."""
    return [draw(lane(f"{prefix}h{i}-", batches)) for i in range(count)]


def full_refresh_schedule(example: int, batches: int = BATCHES) -> list[str | None]:
    """Per batch, the incremental model to `--full-refresh` before its build (None: none).

    Example ``example`` (0, 1, ...) refreshes a model before every batch but the first, taking the
    models in turn across examples, so that ``len(FULL_REFRESHABLE) / (batches - 1)`` examples refresh
    every model once: a strategy that only sometimes drew a refresh gave none in a short run
    (hypothesis starts from simple examples).
    """
    per_example = batches - 1
    return [None] + [FULL_REFRESHABLE[(example * per_example + index) % len(FULL_REFRESHABLE)] for index in range(per_example)]


def merge_batches(histories: list[list[Batch]], index: int) -> Batch:
    """Batch ``index`` of every lane as one landing (one file per table)."""
    merged = Batch()
    for history in histories:
        batch = history[index]
        merged.events += batch.events
        merged.policies += batch.policies
        merged.merchants += batch.merchants
    return merged
