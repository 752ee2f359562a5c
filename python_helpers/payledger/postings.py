"""One key's postings in Python, for ``payledger explain`` without a JVM.

The models post events with the macro ``post_payment_events`` on Spark. An explanation concerns one
(merchant_id, currency): a few hundred events, read from the committed files of the tables the
macro reads (``history.published_explain``). This module applies the same rules to them:

- the posting rules per event type are the rows of the seed ``payment_event_types`` as the build
  loaded it (``available_per_amount``, ``available_per_hold``, ``pending_per_amount``,
  ``reserve_per_amount``, ``reserve_per_hold``);
- a ``funds_released`` event holds ``reserve_pct`` of its amount, the rate in effect for the
  merchant on its ``event_date`` under "latest knowledge wins" (macro ``reserve_rates_as_of``): the
  segment of the latest observed segment version effective by then, the rate of that segment's
  latest observed policy version effective by then, among the versions observed at or before
  ``observed_until``; 0 when none applies, and for every other event type;
- the hold is rounded half up to the currency's ISO 4217 minor unit (two for a code without one,
  ``round_to_minor_unit``); every amount is stored at ``contract.AMOUNT_TYPE``'s scale.

``tests/integration/test_balance_history.py`` checks, on both formats, that these postings equal
the macro's (``payledger explain --engine spark``) row for row.
"""

from __future__ import annotations

import datetime as dt
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from payledger.contract import AMOUNT_TYPE
from payledger.currencies import MINOR_UNITS, OTHERWISE_DECIMALS

#: One unit of the last stored decimal of a rate (``reserve_pct``, decimal(5, 4)).
_RATE_QUANTUM = Decimal("0.0001")
#: The seed's coefficients, in the order of the balances they move.
RULE_COLUMNS = ("available_per_amount", "available_per_hold", "pending_per_amount", "reserve_per_amount", "reserve_per_hold")
#: The columns of a posting as the macro ``balance_explain`` returns them by event.
EVENT_COLUMNS = (
    "event_id",
    "event_type",
    "amount",
    "event_time",
    "ingest_seq",
    "available_delta",
    "pending_delta",
    "reserve_delta",
    "segment",
    "segment_observed_at",
    "reserve_pct",
    "hold_amount",
    "policy_effective_from_date",
    "policy_observed_at",
)


def version_in_effect(versions: list[dict[str, Any]], day: dt.date, effective_from: str) -> dict[str, Any] | None:
    """The version that decides ``day`` among ``versions`` (one key's, each with ``observed_at``
    and the date column ``effective_from``): of those effective on or before ``day``, the one
    observed last (ties: the later effective date), as the macro ``_version_intervals`` orders
    them. None when none is effective yet."""
    effective = [v for v in versions if v[effective_from] <= day]
    return max(effective, key=lambda v: (v["observed_at"], v[effective_from]), default=None)


def observed_by(versions: list[dict[str, Any]], until: dt.datetime | None) -> list[dict[str, Any]]:
    """The versions observed at or before ``until`` (naive UTC): what a build knew. None keeps
    none, as SQL's comparison with a null does."""
    return [] if until is None else [v for v in versions if v["observed_at"] <= until]


def round_half_up(amount: Decimal, decimals: int) -> Decimal:
    """``amount`` rounded half up (away from zero) to ``decimals`` decimals, as Spark's ``round``."""
    return amount.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)


def post_events(
    events: list[dict[str, Any]],
    segment_versions: list[dict[str, Any]],
    policy_versions: list[dict[str, Any]],
    rules: dict[str, dict[str, int]],
    observed_until: dt.datetime | None,
) -> list[dict[str, Any]]:
    """The postings of one merchant's accepted ``events`` in one currency, in ``event_time``,
    ``ingest_seq`` order.

    ``events``: rows of ``int_payment_events_classified`` (``event_id``, ``event_type``, ``amount``
    (Decimal, major units), ``currency``, ``event_date``, ``event_time``, ``ingest_seq``);
    ``segment_versions``: the merchant's rows of ``int_merchant_segment_versions`` (``segment``,
    ``segment_effective_from_date``, ``observed_at``); ``policy_versions``: every row of
    ``int_reserve_policy_versions`` (``segment``, ``reserve_pct``, ``effective_from_date``,
    ``observed_at``); ``rules``: event type -> the seed's coefficients (``RULE_COLUMNS``);
    ``observed_until``: the build's ``policy_observed_at`` (naive UTC). Times are naive UTC.

    Returns one dict per event with ``EVENT_COLUMNS`` (the macro ``balance_explain``'s by event;
    amounts Decimal at scale 4) and ``event_date`` (for ``by_day``). Events of a type
    without a rule are left out, as the macro's inner join leaves them. Raises nothing for valid
    rows.
    """
    segments = observed_by(segment_versions, observed_until)
    policies = observed_by(policy_versions, observed_until)
    postings = []
    for event in sorted(events, key=lambda e: (e["event_time"], e["ingest_seq"])):
        rule = rules.get(event["event_type"])
        if rule is None:
            continue
        segment = policy = None
        if event["event_type"] == "funds_released":
            segment = version_in_effect(segments, event["event_date"], "segment_effective_from_date")
            if segment is not None:
                policy = version_in_effect([p for p in policies if p["segment"] == segment["segment"]], event["event_date"], "effective_from_date")
        amount = event["amount"]
        rate = Decimal(0) if policy is None else policy["reserve_pct"]
        hold = round_half_up(amount * rate, MINOR_UNITS.get(event["currency"], OTHERWISE_DECIMALS))
        postings.append(
            {
                "event_id": event["event_id"],
                "event_type": event["event_type"],
                "amount": amount,
                "event_time": event["event_time"],
                "ingest_seq": event["ingest_seq"],
                "available_delta": _stored(rule["available_per_amount"] * amount + rule["available_per_hold"] * hold),
                "pending_delta": _stored(rule["pending_per_amount"] * amount),
                "reserve_delta": _stored(rule["reserve_per_amount"] * amount + rule["reserve_per_hold"] * hold),
                "segment": None if segment is None else segment["segment"],
                "segment_observed_at": None if segment is None else segment["observed_at"],
                "reserve_pct": rate.quantize(_RATE_QUANTUM),
                "hold_amount": _stored(hold),
                "policy_effective_from_date": None if policy is None else policy["effective_from_date"],
                "policy_observed_at": None if policy is None else policy["observed_at"],
                "event_date": event["event_date"],
            }
        )
    return postings


def _stored(amount: Decimal) -> Decimal:
    return round_half_up(amount, AMOUNT_TYPE.scale)


def by_day(postings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``post_events``' postings summed per ``event_date``, in date order, with the columns of the
    macro ``balance_explain`` by day: event_date, postings, the three deltas (Decimal), the
    distinct rates of the day's ``funds_released`` postings (``reserve_pcts_applied``: sorted as
    text, comma-separated, empty when none), first_event_time and last_event_time."""
    days: dict[dt.date, list[dict[str, Any]]] = {}
    for posting in postings:
        days.setdefault(posting["event_date"], []).append(posting)
    return [
        {
            "event_date": day,
            "postings": len(rows),
            **{delta: _stored(sum((r[delta] for r in rows), Decimal(0))) for delta in ("available_delta", "pending_delta", "reserve_delta")},
            "reserve_pcts_applied": ", ".join(sorted({str(r["reserve_pct"]) for r in rows if r["event_type"] == "funds_released"})),
            "first_event_time": min(r["event_time"] for r in rows),
            "last_event_time": max(r["event_time"] for r in rows),
        }
        for day, rows in sorted(days.items())
    ]
