"""``payledger serve`` over published Delta versions written here with ``deltalake`` (no Spark):
what it answers, its problem details, the switch to a new publication between requests, and the
host it refuses. Builds' real publications are read in the integration tests
(``test_balance_history.py``)."""

from __future__ import annotations

import threading
from decimal import Decimal

import pyarrow as pa
import pytest
from fastapi.testclient import TestClient

from payledger.publish import Publication, record_failed_build, record_publication
from payledger.serve import PublishedBalances, check_host, create_app

BUILD_A = "0a0a0a0a-0000-4000-8000-00000000000a"
BUILD_B = "0b0b0b0b-0000-4000-8000-00000000000b"


def write_version(table, pending_m1: str, mode: str) -> None:
    from deltalake import write_deltalake

    rows = pa.table(
        {
            "merchant_id": ["m1", "m1", "m2"],
            "currency": ["USD", "EUR", "USD"],
            "available_balance": pa.array([Decimal("12.50"), Decimal("1.00"), Decimal("-3.10")], pa.decimal128(18, 2)),
            "pending_balance": pa.array([Decimal(pending_m1), Decimal("0.00"), Decimal("0.00")], pa.decimal128(18, 2)),
            "reserve_hold": pa.array([Decimal("1.25"), Decimal("0.10"), Decimal("0.00")], pa.decimal128(18, 2)),
            "last_event_time": pa.array([None, None, None], pa.timestamp("us", tz="UTC")),
            "source_watermark": pa.array([41, 40, 39], pa.int64()),
            "policy_observed_at": pa.array([None, None, None], pa.timestamp("us", tz="UTC")),
        }
    )
    write_deltalake(str(table), rows, mode=mode)


def publish(warehouse, table, version: int, build: str, when: str) -> Publication:
    publication = Publication("delta", str(table), version, None, build, 41, when)
    record_publication(warehouse, publication)
    return publication


def first_publication(root):
    """Version 0 of a view in ``root / "view"``, published by BUILD_A; returns the table folder."""
    table = root / "view"
    write_version(table, "4.00", "error")
    publish(root / "warehouse", table, 0, BUILD_A, "2026-11-26T10:00:00.000000+00:00")
    return table


@pytest.fixture
def served(tmp_path):
    balances = PublishedBalances(tmp_path / "warehouse", "delta")
    with TestClient(create_app(balances, watch_interval_s=3600)) as client:
        yield tmp_path, balances, client


def assert_problem(response, status: int, words: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["status"] == status and words in body["detail"], body


def test_nothing_is_served_before_a_publication(served):
    _, _, client = served
    assert_problem(client.get("/v1/merchants/m1/balances"), 503, "no build has published")
    assert client.get("/v1/health").json()["status"] == "unpublished"


def test_a_published_version_is_served_with_decimal_strings_and_problem_details(served):
    root, balances, client = served
    first_publication(root)
    assert balances.refresh()
    body = client.get("/v1/merchants/m1/balances").json()
    assert body["merchant_id"] == "m1"
    assert [(e["currency"], e["available"], e["pending"], e["reserve_hold"]) for e in body["balances"]] == [
        ("EUR", "1.00", "0.00", "0.10"),
        ("USD", "12.50", "4.00", "1.25"),
    ]
    assert {(e["published_version"], e["published_by_build"], e["source_watermark"]) for e in body["balances"]} == {(0, BUILD_A, 40), (0, BUILD_A, 41)}
    assert [e["currency"] for e in client.get("/v1/merchants/m1/balances", params={"currency": "USD"}).json()["balances"]] == ["USD"]
    assert_problem(client.get("/v1/merchants/nobody/balances"), 404, "no published balance")
    assert_problem(client.get("/v1/merchants/m2/balances", params={"currency": "EUR"}), 404, "in EUR")
    assert_problem(client.get("/v1/merchants/m1;drop/balances"), 422, "merchant id must match")
    assert_problem(client.get("/v1/merchants/m1/balances", params={"currency": "usd"}), 422, "ISO 4217")
    assert_problem(client.get("/v1/merchants/m1/balances", params={"as_of_build": "yesterday"}), 422, "invocation id")
    assert client.get("/docs").status_code == 200 and "/v1/health" in client.get("/openapi.json").json()["paths"]


def test_a_new_publication_is_served_whole_and_earlier_builds_stay_readable(served):
    root, balances, client = served
    table = first_publication(root)
    balances.refresh()
    write_version(table, "9.00", "overwrite")
    assert client.get("/v1/merchants/m1/balances", params={"currency": "USD"}).json()["balances"][0]["pending"] == "4.00", "committed, not published"

    # Requests during many switches between the two versions: every response is one version whole.
    stop, responses = threading.Event(), []

    def request() -> None:
        while not stop.is_set():
            responses.append(client.get("/v1/merchants/m1/balances").json()["balances"])

    requester = threading.Thread(target=request)
    requester.start()
    for flip in range(40):
        version, build = (1, BUILD_B) if flip % 2 == 0 else (0, BUILD_A)
        publish(root / "warehouse", table, version, build, f"2026-11-26T11:00:{flip:02d}.000000+00:00")
        balances.refresh()
    stop.set()
    requester.join()
    by_version = {0: "4.00", 1: "9.00"}
    assert len({e[0]["published_version"] for e in responses}) == 2, "the requests never saw the switch"
    for entries in responses:
        assert len({e["published_version"] for e in entries}) == 1, entries
        usd = next(e for e in entries if e["currency"] == "USD")
        assert usd["pending"] == by_version[usd["published_version"]], entries

    assert client.get("/v1/merchants/m1/balances", params={"as_of_build": BUILD_B}).json()["balances"][1]["pending"] == "9.00"
    assert_problem(client.get("/v1/merchants/m1/balances", params={"as_of_build": "0c0c0c0c-0000-4000-8000-00000000000c"}), 404, "kept")
    # A kept publication whose files are gone (retention): 410.
    gone = "0d0d0d0d-0000-4000-8000-00000000000d"
    publish(root / "warehouse", root / "vacuumed", 5, gone, "2026-11-26T12:00:00.000000+00:00")
    publish(root / "warehouse", table, 1, BUILD_B, "2026-11-26T12:00:01.000000+00:00")
    balances.refresh()
    assert_problem(client.get("/v1/merchants/m1/balances", params={"as_of_build": gone}), 410, "can no longer be read")


def test_a_failed_build_keeps_the_served_version_and_health_says_so(served):
    root, balances, client = served
    first_publication(root)
    balances.refresh()
    assert client.get("/v1/health").json()["status"] == "ok"
    record_failed_build(root / "warehouse", "delta", BUILD_B, ["test.payledger.assert_merchant_balance_current_reconciles: fail"])
    balances.refresh()
    health = client.get("/v1/health").json()
    assert health["status"] == "degraded" and health["newer_build_failed"] and health["last_failed_build"]["invocation_id"] == BUILD_B
    assert (health["published_version"], health["published_by_build"], health["source_watermark"]) == (0, BUILD_A, 41)
    assert health["age_s"] > 0
    assert client.get("/v1/merchants/m1/balances", params={"currency": "USD"}).json()["balances"][0]["pending"] == "4.00"


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.5", "example.com", "::"])
def test_the_server_refuses_addresses_other_than_loopback(host):
    with pytest.raises(ValueError, match="loopback"):
        check_host(host)
    for loopback in ("127.0.0.1", "::1", "localhost"):
        check_host(loopback)
