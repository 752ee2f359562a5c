"""One key's postings in Python (``payledger.postings``, ``payledger explain`` without a JVM): the
as-of rules and rounding on hand-made versions. The integration tests compare it with the macros'
postings on Spark (``test_balance_history.py``) and with the view on every key
(``test_balance_view.py``)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from payledger.postings import by_day, observed_by, post_events, version_in_effect

RULES = {
    "capture_settled": {"available_per_amount": 0, "available_per_hold": 0, "pending_per_amount": 1, "reserve_per_amount": 0, "reserve_per_hold": 0},
    "funds_released": {"available_per_amount": 1, "available_per_hold": -1, "pending_per_amount": -1, "reserve_per_amount": 0, "reserve_per_hold": 1},
}
SEEN = dt.datetime(2026, 5, 1)


def day(text: str) -> dt.date:
    return dt.date.fromisoformat(text)


def at(hour: int) -> dt.datetime:
    return dt.datetime(2026, 4, 1, hour)


def segment(name: str, effective: str, observed_hour: int) -> dict:
    return {"segment": name, "segment_effective_from_date": day(effective), "observed_at": at(observed_hour)}


def policy(name: str, pct: str, effective: str, observed_hour: int) -> dict:
    return {"segment": name, "reserve_pct": Decimal(pct), "effective_from_date": day(effective), "observed_at": at(observed_hour)}


def event(event_id: str, event_type: str, amount: str, date: str, currency: str = "USD", seq: int = 1) -> dict:
    time = dt.datetime.fromisoformat(f"{date} 12:00:00")
    return {
        "event_id": event_id,
        "event_type": event_type,
        "amount": Decimal(amount),
        "currency": currency,
        "event_date": day(date),
        "event_time": time,
        "ingest_seq": seq,
    }


def test_the_latest_observed_version_decides_from_its_own_effective_date_on():
    versions = [segment("retail", "2026-01-01", 1), segment("travel", "2026-03-01", 2), segment("gaming", "2026-02-01", 3)]
    assert version_in_effect(versions, day("2025-12-31"), "segment_effective_from_date") is None
    assert version_in_effect(versions, day("2026-01-15"), "segment_effective_from_date")["segment"] == "retail"
    # gaming, observed last, overrides travel's days too: latest knowledge wins.
    assert version_in_effect(versions, day("2026-03-15"), "segment_effective_from_date")["segment"] == "gaming"
    # Observed at the same time: the later effective date decides its days.
    tied = [segment("retail", "2026-01-01", 1), segment("travel", "2026-02-01", 1)]
    assert [version_in_effect(tied, day(d), "segment_effective_from_date")["segment"] for d in ("2026-01-20", "2026-02-20")] == ["retail", "travel"]


def test_a_build_knows_only_the_versions_observed_by_its_time():
    versions = [segment("retail", "2026-01-01", 1), segment("travel", "2026-01-01", 5)]
    assert observed_by(versions, at(3)) == versions[:1]
    assert observed_by(versions, None) == [], "no observation time: no version, as SQL's comparison with null"


def test_holds_round_half_up_at_the_currency_minor_unit_and_only_releases_hold():
    segments = [segment("retail", "2026-01-01", 1)]
    policies = [policy("retail", "0.0500", "2026-01-01", 1), policy("retail", "0.1000", "2026-03-01", 2)]
    events = [
        event("h2", "funds_released", "4.930", "2026-02-10", "BHD", 2),  # 0.2465 -> 0.247 (half even: 0.246)
        event("j2", "funds_released", "105", "2026-03-10", "JPY", 3),  # 10.5 -> 11
        event("x2", "funds_released", "0.25", "2026-02-10", "XYZ", 4),  # no ISO unit: 2 decimals, 0.0125 -> 0.01
        event("c1", "capture_settled", "4.930", "2026-02-09", "BHD", 1),
        event("u1", "capture_pending", "1.00", "2026-02-09", "USD", 5),  # no rule: not posted
    ]
    posted = {p["event_id"]: p for p in post_events(events, segments, policies, RULES, SEEN)}
    assert list(posted) == ["c1", "h2", "x2", "j2"], "in event_time order, the event without a rule left out"
    assert (posted["h2"]["hold_amount"], posted["j2"]["hold_amount"], posted["x2"]["hold_amount"]) == (Decimal("0.247"), Decimal("11"), Decimal("0.01"))
    assert (posted["h2"]["available_delta"], posted["h2"]["pending_delta"], posted["h2"]["reserve_delta"]) == (
        Decimal("4.683"),
        Decimal("-4.93"),
        Decimal("0.247"),
    )
    assert posted["j2"]["reserve_pct"] == Decimal("0.1000") and posted["j2"]["policy_effective_from_date"] == day("2026-03-01")
    assert (posted["c1"]["segment"], posted["c1"]["reserve_pct"], posted["c1"]["pending_delta"]) == (None, Decimal("0"), Decimal("4.93"))


def test_a_segment_without_a_policy_holds_nothing_and_days_sum_their_postings():
    events = [event("f1", "funds_released", "10.00", "2026-02-10", seq=1), event("f2", "funds_released", "20.00", "2026-02-10", seq=2)]
    posted = post_events(events, [segment("vip", "2026-01-01", 1)], [policy("retail", "0.1000", "2026-01-01", 1)], RULES, SEEN)
    assert [(p["segment"], p["reserve_pct"], p["hold_amount"], p["policy_observed_at"]) for p in posted] == [("vip", Decimal("0"), Decimal("0"), None)] * 2
    (only,) = by_day(posted)
    assert (only["event_date"], only["postings"], only["available_delta"], only["pending_delta"]) == (day("2026-02-10"), 2, Decimal("30"), Decimal("-30"))
    assert only["reserve_pcts_applied"] == "0.0000"
