"""``payledger serve`` over published Delta versions written here with ``deltalake`` (no Spark):
what it answers, its problem details, the switch to a new publication between requests, API keys,
and the hosts it refuses. Builds' real publications are read in the integration tests
(``test_balance_history.py``)."""

from __future__ import annotations

import json
import logging
import re
import threading
from dataclasses import replace
from decimal import Decimal

import pyarrow as pa
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from payledger.apikeys import ApiKeys, digest, new_key
from payledger.cli import main
from payledger.contract import AMOUNT_TYPE
from payledger.publish import Publication, record_failed_build, record_publication
from payledger.serve import PublishedBalances, access_log_off_the_loop, check_host, create_app
from tests.asgi import uvicorn_in_thread
from tests.view_tables import view_row, view_table

BUILD_A = "0a0a0a0a-0000-4000-8000-00000000000a"
BUILD_B = "0b0b0b0b-0000-4000-8000-00000000000b"


def write_version(table, pending_m1: str, mode: str) -> None:
    from deltalake import write_deltalake

    rows = view_table(
        [
            view_row("m1", "USD", "12.50", pending_m1, "1.25", 41),
            view_row("m1", "EUR", "1.00", "0.00", "0.10", 40),
            view_row("m2", "USD", "-3.10", "0.00", "0.00", 39),
        ]
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


def test_health_reports_how_far_the_landed_events_are_ahead_of_the_published_version(served, monkeypatch):
    from deltalake import write_deltalake

    root, balances, client = served
    monkeypatch.setattr("payledger.serve.SOURCE_POSITION_TTL_S", 0)
    table, landing = first_publication(root), root / "landing"
    write_deltalake(str(landing), pa.table({"ingest_seq": pa.array(range(1, 51), pa.int64())}))
    publication = Publication("delta", str(table), 0, None, BUILD_B, 41, "2026-11-26T11:00:00.000000+00:00", events_watermark=45, source_location=str(landing))
    record_publication(root / "warehouse", publication)
    balances.refresh()
    health = client.get("/v1/health").json()
    assert (health["source_position"], health["events_watermark"], health["source_lag"]) == (50, 45, 5)
    write_deltalake(str(landing), pa.table({"ingest_seq": pa.array(range(51, 61), pa.int64())}), mode="append")
    assert client.get("/v1/health").json()["source_lag"] == 15, "a new load moves the lag"
    # The first publication recorded no landing table: unknown, not zero.
    record_publication(root / "warehouse", replace(publication, source_location=None, invocation_id=BUILD_A))
    balances.refresh()
    assert (client.get("/v1/health").json()["source_position"], client.get("/v1/health").json()["source_lag"]) == (None, None)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.5", "example.com", "::"])
def test_the_server_refuses_addresses_other_than_loopback_unless_keys_are_configured(host, tmp_path):
    with pytest.raises(ValueError, match="loopback"):
        check_host(host)
    with pytest.raises(ValueError, match="loopback"):
        check_host(host, ApiKeys.load(tmp_path / "missing.json"))
    for loopback in ("127.0.0.1", "::1", "localhost"):
        check_host(loopback)
    new_key(tmp_path / "keys.json", "ui", None)
    check_host(host, ApiKeys.load(tmp_path / "keys.json"))


def served_with_keys(root):
    """A key file with a key for every merchant and one for m1 only; returns (keys, ui, portal)."""
    first_publication(root)
    ui, portal = new_key(root / "keys.json", "ui", None), new_key(root / "keys.json", "portal", ["m1"])
    return ApiKeys.load(root / "keys.json"), ui, portal


def test_api_keys_guard_every_request_and_a_key_reads_only_its_merchants(tmp_path):
    keys, ui, portal = served_with_keys(tmp_path)
    balances = PublishedBalances(tmp_path / "warehouse", "delta")
    balances.refresh()
    with TestClient(create_app(balances, watch_interval_s=3600, keys=keys)) as client:

        def get(path: str, key: str | None, **params):
            return client.get(path, params=params, headers={"Authorization": f"Bearer {key}"} if key else {})

        for key in (None, "plk_wrong", ui[:-1]):
            response = get("/v1/merchants/m1/balances", key)
            assert_problem(response, 401, "valid API key")
            assert response.headers["www-authenticate"] == "Bearer"
            assert_problem(get("/v1/health", key), 401, "valid API key")
        assert client.get("/v1/merchants/m1/balances", headers={"Authorization": ui}).status_code == 401, "not a bearer token"
        assert [e["currency"] for e in get("/v1/merchants/m2/balances", ui).json()["balances"]] == ["USD"]
        assert [e["currency"] for e in get("/v1/merchants/m1/balances", portal).json()["balances"]] == ["EUR", "USD"]
        assert get("/v1/health", portal).json()["published_by_build"] == BUILD_A

        # Out of the key's scope: the very answer an unknown merchant gets, with or without a currency.
        for params in ({}, {"currency": "USD"}, {"currency": "EUR"}):
            hidden = get("/v1/merchants/m2/balances", portal, **params)
            unknown = get("/v1/merchants/m9/balances", ui, **params)
            assert hidden.status_code == unknown.status_code == 404
            assert hidden.headers == unknown.headers
            assert hidden.text == unknown.text.replace("m9", "m2")
        assert_problem(get("/v1/merchants/m1;x/balances", portal), 422, "merchant id")


def test_keys_never_reach_the_servers_log(tmp_path, caplog):
    """A real uvicorn server (its access log included) answers requests with good and bad keys."""
    import httpx2

    keys, ui, portal = served_with_keys(tmp_path)
    app = create_app(PublishedBalances(tmp_path / "warehouse", "delta"), watch_interval_s=3600, keys=keys)
    caplog.set_level(logging.DEBUG)
    statuses = []
    with uvicorn_in_thread(app, log_config=None, log_level="debug") as port:
        for key in (ui, portal, ui + "x"):
            for path in ("/v1/merchants/m2/balances", "/v1/health"):
                statuses.append(httpx2.get(f"http://127.0.0.1:{port}{path}", headers={"Authorization": f"Bearer {key}"}).status_code)
    assert statuses == [200, 200, 404, 200, 401, 401]
    assert "/v1/merchants/m2/balances" in caplog.text, "the access log was not captured"
    assert ui not in caplog.text and portal not in caplog.text and ui[4:20] not in caplog.text


class StuckStream:
    """A stream whose writes wait until ``free`` is set (a log file on a busy disk)."""

    def __init__(self) -> None:
        self.free, self.written = threading.Event(), []

    def write(self, text: str) -> None:
        assert self.free.wait(30), "the stream was never freed"
        self.written.append(text)

    def flush(self) -> None:
        pass


def test_the_access_log_is_written_off_the_event_loop_in_uvicorns_format():
    names = ("uvicorn", "uvicorn.error", "uvicorn.access")
    before = {name: (logging.getLogger(name).handlers[:], logging.getLogger(name).level, logging.getLogger(name).propagate) for name in names}
    stream = StuckStream()
    listener = access_log_off_the_loop()
    try:
        listener.handlers[0].setStream(stream)
        access = logging.getLogger("uvicorn.access")
        # As uvicorn's HTTP protocol logs a request; the call returns while the stream is stuck.
        logged = threading.Thread(target=access.info, args=('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5000", "GET", "/v1/health", "1.1", 200))
        logged.start()
        logged.join(5)
        assert not logged.is_alive(), "logging an access line waited for the stream"
        assert stream.written == []
    finally:
        stream.free.set()
        listener.stop()
        for name, (handlers, level, propagate) in before.items():
            logger = logging.getLogger(name)
            logger.handlers, logger.propagate = handlers, propagate
            logger.setLevel(level)
    assert re.fullmatch(r'INFO: +127\.0\.0\.1:5000 - "GET /v1/health HTTP/1\.1" 200 OK\n', "".join(stream.written)), stream.written


def test_payledger_api_key_add_prints_a_key_once_and_stores_only_its_digest(tmp_path):
    path = tmp_path / "keys.json"
    runner = CliRunner()
    first = runner.invoke(main, ["api-key", "add", "ui", "--all-merchants", "--api-keys", str(path)])
    second = runner.invoke(main, ["api-key", "add", "portal", "--merchant", "m1", "--merchant", "m_2"], env={"PAYLEDGER_API_KEYS": str(path)})
    assert first.exit_code == second.exit_code == 0, (first.output, second.output)
    ui, portal = first.output.strip(), second.output.strip()
    assert ui != portal and ui.startswith("plk_") and len(ui) > 40
    text = path.read_text()
    assert ui not in text and portal not in text
    assert path.stat().st_mode & 0o777 == 0o600
    assert json.loads(text)["keys"] == [
        {"name": "ui", "sha256": digest(ui), "merchants": "*"},
        {"name": "portal", "sha256": digest(portal), "merchants": ["m1", "m_2"]},
    ]
    keys = ApiKeys.load(path)
    assert keys.authenticate(portal).may_read("m_2") and not keys.authenticate(portal).may_read("m3")
    for args, words in (
        (["api-key", "add", "ui", "--all-merchants"], "already has a key named ui"),
        (["api-key", "add", "x", "--merchant", "m 1"], "merchant id"),
        (["api-key", "add", "y"], "--all-merchants"),
    ):
        result = runner.invoke(main, [*args, "--api-keys", str(path)])
        assert result.exit_code != 0 and words in result.output, result.output
    assert ApiKeys.load(path).keys == keys.keys, "a refused key changed the file"


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("not json", "not JSON"),
        ('{"key": []}', '{"keys": [...]}'),
        ('{"keys": [{"sha256": "ab"}]}', "keys[0] needs a name"),
        ('{"keys": [{"name": "a", "sha256": "AB", "merchants": "*"}]}', "64 lowercase hex"),
        ('{"keys": [{"name": "a", "sha256": "' + "a" * 64 + '"}]}', "needs merchants"),
        ('{"keys": [{"name": "a", "sha256": "' + "a" * 64 + '", "merchants": ["m 1"]}]}', "merchant id"),
    ],
)
def test_a_malformed_key_file_is_refused_with_the_entry_named(tmp_path, content, words):
    path = tmp_path / "keys.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=re.escape(words)):
        ApiKeys.load(path)
    result = CliRunner().invoke(main, ["serve", "--api-keys", str(path)])
    assert result.exit_code == 2 and "--api-keys" in result.output, result.output


def test_the_index_encodes_a_version_as_the_row_by_row_encoder_would():
    """Arrow's kernels build each entry's JSON; the bytes equal ``json.dumps`` of ``_entry``, for
    nulls, negative and zero amounts at each minor unit, and times on and off the second. A currency JSON would need
    escaped is left to the row-by-row encoder."""
    import datetime as dt

    from payledger.serve import _encoded_entries, _entry

    when = pa.array([dt.datetime(2026, 1, 1, 1, 2, 3, 456, tzinfo=dt.UTC), dt.datetime(2026, 1, 1, 1, 2, 3, tzinfo=dt.UTC), None], pa.timestamp("us", tz="UTC"))
    rows = pa.table(
        {
            "merchant_id": ["m1", "m1", "m2"],
            "currency": ["USD", "KWD", "JPY"],
            "available_balance": pa.array([Decimal("12.50"), Decimal("-3.105"), Decimal("0")], AMOUNT_TYPE),
            "pending_balance": pa.array([Decimal("0.01"), None, Decimal("-0.00")], AMOUNT_TYPE),
            "reserve_hold": pa.array([Decimal("1.25"), Decimal("0.1"), Decimal("100000000")], AMOUNT_TYPE),
            "last_event_time": when,
            "source_watermark": pa.array([41, None, 7], pa.int64()),
            "policy_observed_at": pa.array([None, when[0].as_py(), when[1].as_py()], pa.timestamp("us", tz="UTC")),
        }
    )
    publication = Publication("delta", "/v", 3, None, BUILD_A, 41, "2026-11-26T10:00:00+00:00")
    expected = [json.dumps(_entry(row, publication), separators=(",", ":")).encode() for row in rows.to_pylist()]
    assert _encoded_entries(rows, publication).to_pylist() == expected
    # Each amount with its currency's minor unit of decimals (stored with four).
    shown = [(e["available"], e["pending"], e["reserve_hold"]) for e in map(json.loads, expected)]
    assert shown == [("12.50", "0.01", "1.25"), ("-3.105", None, "0.100"), ("0", "0", "100000000")]
    odd = rows.set_column(1, "currency", pa.array(["USD", 'E"R', "JPY"]))
    assert _encoded_entries(odd, publication) is None


def test_the_index_groups_each_merchants_entries_sorted_by_currency_on_either_encoder(tmp_path):
    """Rows in any order: each merchant's body lists its currencies sorted, the same with Arrow's
    encoder and with the row-by-row one (taken when a currency would need escaping)."""
    from deltalake import write_deltalake

    from payledger.serve import BalanceIndex

    for odd in ("EUR", 'E"R'):
        table = tmp_path / f"view-{len(odd)}-{odd.isalpha()}"
        rows = [
            view_row("m2", "USD", "1.00", "0.00", "0.00", 1),
            view_row("m1", "USD", "2.00", "0.00", "0.00", 2),
            view_row("m1", odd, "3.00", "0.00", "0.00", 3),
        ]
        write_deltalake(str(table), view_table(rows))
        index = BalanceIndex.load(Publication("delta", str(table), 0, None, BUILD_A, 3, "2026-11-26T10:00:00+00:00"))
        m1 = json.loads(index.body("m1"))
        assert [(b["currency"], b["available"]) for b in m1["balances"]] == sorted([("USD", "2.00"), (odd, "3.00")]), odd
        assert [b["currency"] for b in json.loads(index.body("m2"))["balances"]] == ["USD"]
        assert json.loads(index.body("m1", odd))["balances"][0]["available"] == "3.00"
