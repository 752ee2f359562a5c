"""An independent reference of the balance fold, for tests only.

Plain Python with ``decimal.Decimal``; it imports nothing from the dbt project or from ``payledger``.
It follows the written rules of the README ("The fold"), not the SQL. Minor units come straight
from the ``iso4217`` package (the models read a macro generated from it).
"""

from __future__ import annotations

import datetime as dt
import re
import string
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

import iso4217

#: ISO 4217 code -> minor unit, for the codes whose minor unit is a number (not "N.A.").
MINOR_UNITS = {code: int(entry["CcyMnrUnts"]) for code, entry in iso4217.raw_table.items() if code and str(entry["CcyMnrUnts"]).isdigit()}
EVENT_TYPES = {
    "capture_settled",
    "funds_released",
    "reserve_released",
    "refund_posted",
    "chargeback_opened",
    "chargeback_won",
    "chargeback_lost",
    "payout_paid",
}
CURRENCY = re.compile(r"[A-Z]{3}")
CAPITALS = str.maketrans(string.ascii_lowercase, string.ascii_uppercase)


@dataclass(frozen=True)
class PolicyVersion:
    """A reserve policy version; ``observed`` orders observations (higher = later)."""

    segment: str
    reserve_pct: Decimal
    effective_from: dt.date
    observed: int


@dataclass(frozen=True)
class SegmentVersion:
    """A merchant's segment version; ``observed`` orders observations (higher = later)."""

    merchant_id: str
    segment: str
    effective_from: dt.date
    observed: int


@dataclass
class Balance:
    available: Decimal = Decimal("0.00")
    pending: Decimal = Decimal("0.00")
    reserve: Decimal = Decimal("0.00")
    last_event_time: dt.datetime | None = None
    source_watermark: int = 0


def _minor(currency: str) -> Decimal:
    """One minor unit of ``currency`` in major units: JPY 1, USD 0.01, KWD 0.001."""
    return Decimal(1).scaleb(-MINOR_UNITS[currency])


def _blank(value: str | None) -> bool:
    return value is None or value.strip() == ""


def validation_reason(event: dict) -> str | None:
    """The first failing validation check of a landed event row, or None."""
    if _blank(event["event_id"]):
        return "missing_event_id"
    if _blank(event["merchant_id"]):
        return "missing_merchant_id"
    if event["event_type"] not in EVENT_TYPES:
        return "unknown_event_type"
    # Stored as decimal(18,4): 14 integer digits once rounded to four decimals.
    if event["amount"] is None or event["amount"] <= 0 or event["amount"].quantize(Decimal("0.0001"), rounding=ROUND_HALF_UP) >= 10**14:
        return "invalid_amount"
    if event["currency"] is None or not CURRENCY.fullmatch(event["currency"]):
        return "invalid_currency"
    if event["currency"] not in MINOR_UNITS:
        return "unknown_currency"
    if event["amount"] != event["amount"].quantize(_minor(event["currency"])):
        return "amount_precision"
    if event["event_time"] is None:
        return "missing_event_time"
    return None


PAYLOAD = ("merchant_id", "currency", "event_type", "amount", "event_time")


def classify(events: list[dict]) -> tuple[list[dict], dict[int, str]]:
    """Split landed rows (each with ``ingest_seq``) into accepted rows and ``{ingest_seq: reason}``."""
    accepted: dict[str, dict] = {}
    rejects: dict[int, str] = {}
    for event in sorted(events, key=lambda e: e["ingest_seq"]):
        # ISO 4217 codes are capitals; a code sent in lower case (Stripe's `usd`) is that code.
        if event["currency"] is not None:
            event = {**event, "currency": event["currency"].translate(CAPITALS)}
        reason = validation_reason(event)
        if reason is None and event["event_id"] in accepted:
            first = accepted[event["event_id"]]
            same = all(first[name] == event[name] for name in PAYLOAD)
            reason = "exact_duplicate" if same else "conflicting_duplicate"
        if reason is None:
            accepted[event["event_id"]] = event
        else:
            rejects[event["ingest_seq"]] = reason
    return list(accepted.values()), rejects


def reserve_pct(merchant_id: str, day: dt.date, segments: list[SegmentVersion], policies: list[PolicyVersion]) -> Decimal:
    """The rate in effect for a merchant on a day: latest observed applicable versions, else 0."""
    applicable = [v for v in segments if v.merchant_id == merchant_id and v.effective_from <= day]
    if not applicable:
        return Decimal("0")
    segment = max(applicable, key=lambda v: v.observed).segment
    rates = [p for p in policies if p.segment == segment and p.effective_from <= day]
    if not rates:
        return Decimal("0")
    return max(rates, key=lambda p: p.observed).reserve_pct


def fold(events: list[dict], segments: list[SegmentVersion], policies: list[PolicyVersion]) -> tuple[dict[tuple[str, str], Balance], dict[int, str]]:
    """Balances per (merchant_id, currency) and rejects per ingest_seq for the landed rows."""
    accepted, rejects = classify(events)
    balances: dict[tuple[str, str], Balance] = {}
    for event in accepted:
        a = event["amount"]
        b = balances.setdefault((event["merchant_id"], event["currency"]), Balance())
        kind = event["event_type"]
        # One branch per event type, written out: the oracle shares no table with the models.
        if kind == "capture_settled":
            b.pending += a
        elif kind == "funds_released":
            r = reserve_pct(event["merchant_id"], event["event_time"].date(), segments, policies)
            # Half up to the currency's minor unit (amounts are stored with four decimals: any ISO unit).
            h = (a * r).quantize(_minor(event["currency"]), rounding=ROUND_HALF_UP)
            b.available += a - h
            b.pending -= a
            b.reserve += h
        elif kind == "reserve_released":
            b.available += a
            b.reserve -= a
        elif kind == "refund_posted":
            b.available -= a
        elif kind == "chargeback_opened":
            b.available -= a
            b.reserve += a
        elif kind == "chargeback_won":
            b.available += a
            b.reserve -= a
        elif kind == "chargeback_lost":
            b.reserve -= a
        elif kind == "payout_paid":
            b.available -= a
        b.last_event_time = max(filter(None, [b.last_event_time, event["event_time"]]))
        b.source_watermark = max(b.source_watermark, event["ingest_seq"])
    return balances, rejects
