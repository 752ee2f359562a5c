"""The balance as of a past build (``payledger balance``), why it is what it is (``payledger
explain``), and reads that never see half a build."""

from __future__ import annotations

import copy
import csv
import datetime as dt
import io
import json
import os
import re
import signal
import sys
import time
import urllib.request
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from payledger import history
from payledger.cli import main
from payledger.maintain import maintain_tables
from payledger.ports import free_port
from payledger.publish import read_document, table_location
from payledger.serve import PublishedBalances
from payledger.warehouse import LANDING_EVENTS, PUBLISHED_RELATION, VIEW
from tests import reference
from tests.processes import Process, executable
from tests.support import History, event, merchant, policy

pytestmark = [pytest.mark.integration, pytest.mark.both_formats, pytest.mark.slow]

BALANCE = ("available_balance", "pending_balance", "reserve_hold")


def balances(rows) -> dict[tuple[str, str], tuple[Decimal, Decimal, Decimal]]:
    """Rows with the view's columns, as {(merchant_id, currency): (available, pending, reserve)}."""
    return {(r["merchant_id"], r["currency"]): tuple(r[c] for c in BALANCE) for r in rows}


def expected_balances(state: History) -> dict[tuple[str, str], tuple[Decimal, Decimal, Decimal]]:
    return {key: (b.available, b.pending, b.reserve) for key, b in state.expected().items()}


def three_builds(dbt, warehouse, after_first) -> tuple[list[str], list[History]]:
    """Build 1: two merchants (retail 10%, travel 5%) with captures and releases in March.
    Build 2: new events, a late event (February) and an exact duplicate of a build-1 event.
    Build 3: retail's reserve raised to 20% from March 5th (a retroactive policy change).
    ``after_first()`` runs after build 1. Returns the invocation ids and the history landed up to
    each build (for the reference)."""
    state = History()
    ids, states = [], []
    state.land_merchants(warehouse, [merchant("r1", "retail", "2026-01-01"), merchant("t1", "travel", "2026-01-01")])
    state.land_policies(warehouse, [policy("retail", "0.1000", "2026-01-01"), policy("travel", "0.0500", "2026-01-01")])
    state.land_events(
        warehouse,
        [
            event("r1-c1", "r1", "capture_settled", "100.00", "2026-03-01 10:00:00"),
            event("r1-f1", "r1", "funds_released", "100.00", "2026-03-02 10:00:00"),
            event("r1-e1", "r1", "capture_settled", "30.00", "2026-03-01 11:00:00", currency="EUR"),
            event("t1-c1", "t1", "capture_settled", "80.00", "2026-03-01 10:00:00"),
            event("t1-f1", "t1", "funds_released", "80.00", "2026-03-06 10:00:00"),
        ],
    )
    ids.append(dbt.scenario_build().invocation_id)
    states.append(copy.deepcopy(state))
    after_first()
    state.land_events(
        warehouse,
        [
            event("r1-f2", "r1", "funds_released", "50.00", "2026-03-10 10:00:00"),
            event("r1-late", "r1", "refund_posted", "7.50", "2026-02-01 09:00:00"),
            event("r1-f1", "r1", "funds_released", "100.00", "2026-03-02 10:00:00"),  # exact duplicate
            event("t1-p1", "t1", "payout_paid", "10.00", "2026-03-11 10:00:00"),
        ],
    )
    ids.append(dbt.scenario_build().invocation_id)
    states.append(copy.deepcopy(state))
    state.land_policies(warehouse, [policy("retail", "0.2000", "2026-03-05"), policy("travel", "0.0500", "2026-01-01")])
    ids.append(dbt.scenario_build().invocation_id)
    states.append(copy.deepcopy(state))
    return ids, states


READER = """
import json, sys, time, urllib.request
from decimal import Decimal
from pathlib import Path
from payledger.publish import Publication, read_document, read_published_view
fmt, location, warehouse, out, stop, api = sys.argv[1:7]
table = Path(location)
log = table / ("_delta_log" if fmt == "delta" else "metadata")
print("reader ready", flush=True)


def committed_version():
    # The table's latest commit, read from its folder: Delta's log, or Iceberg's most recently
    # written metadata file (by write time, not by the version in its name: the test warehouse's
    # DROP TABLE ... PURGE of an earlier test's table at the same location can leave metadata files
    # with higher versions).
    if fmt == "delta":
        from deltalake import DeltaTable

        return Publication(fmt, location, DeltaTable(location).version(), None, "", None, "")
    from pyiceberg.table import StaticTable

    files = sorted(log.glob("*.metadata.json"), key=lambda p: (p.stat().st_mtime_ns, int(p.name.split("-")[0])))
    snapshot = StaticTable.from_metadata(str(files[-1])).metadata.current_snapshot_id
    return Publication(fmt, location, snapshot, str(files[-1]), "", None, "")


def money(value):
    # An amount as text at the stored scale (four decimals), as as_state writes the reference's.
    return str(Decimal(value).quantize(Decimal("0.0001")))


def state(version):
    rows = read_published_view(version).to_pylist()
    return sorted([r["merchant_id"], r["currency"], money(r["available_balance"]), money(r["pending_balance"]), money(r["reserve_hold"])] for r in rows)


def served(merchant_id):
    with urllib.request.urlopen(f"{api}/v1/merchants/{merchant_id}/balances", timeout=10) as response:
        entries = json.load(response)["balances"]
    builds = {e["published_by_build"] for e in entries}
    rows = sorted([e["currency"], e["available"], e["pending"], e["reserve_hold"]] for e in entries)
    return {"kind": "served", "merchant_id": merchant_id, "builds": sorted(builds), "rows": rows}


# Three readers in one loop, none through Spark or the metastore: the view's latest commit (its
# log or metadata folder, listed every 0.1 s, read when it changed), its published version (the
# publication document, read when it changed) and `payledger serve`'s answer for each merchant.
seen = failures = 0
listed = published = None
with open(out, "w") as handle:
    while not Path(stop).exists():
        listing = sorted(p.name for p in log.iterdir())
        if listing != listed:
            try:
                handle.write(json.dumps({"kind": "committed", "state": state(committed_version())}) + "\\n")
                listed = listing
                seen += 1
            except Exception as error:
                # Iceberg writes a metadata file in place, and its catalog commits it only
                # afterwards: one still being written does not parse yet. Read again; give up after
                # many failures. A Delta commit is one log file, renamed into place: any failure
                # there is real.
                failures += 1
                print(f"reader retry {failures}: {str(error).splitlines()[0][:300]}", flush=True)
                if fmt == "delta" or failures > 50:
                    raise
        current = read_document(Path(warehouse), fmt).current
        if current is not None and current != published:
            handle.write(json.dumps({"kind": "published", "build": current.invocation_id, "state": state(current)}) + "\\n")
            published = current
        for merchant_id in ("r1", "t1"):
            handle.write(json.dumps(served(merchant_id)) + "\\n")
        handle.flush()
        time.sleep(0.1)
print(f"reader done {seen}, {failures} retries", flush=True)
"""


class CommittedStateReader:
    """Another process that polls the view without Spark or the metastore (Derby keeps it to one
    process), through ``payledger.publish``'s readers: the latest commit (Delta's log with
    ``deltalake``, Iceberg's newest metadata file with ``pyiceberg``) and the published version.
    Every read is one line of ``states.jsonl``: ``kind`` (committed or published), ``state``
    (sorted [merchant_id, currency, available, pending, reserve] rows) and, when published, the
    ``build`` that published it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.process: Process | None = None
        self.server: Process | None = None

    def start(self, spark, warehouse: Path) -> None:
        """Start ``payledger serve`` on the warehouse, then the reader."""
        location = table_location(spark, os.environ["PAYLEDGER_FORMAT"], VIEW)
        api = f"http://127.0.0.1:{free_port()}"
        self.server = Process([executable("payledger"), "serve", "--port", api.rsplit(":", 1)[1]], {**os.environ, "PAYLEDGER_WAREHOUSE": str(warehouse)})
        deadline = time.monotonic() + 120
        while not self._health(api):
            assert self.server.popen.poll() is None and time.monotonic() < deadline, self.server.lines[-20:]
            time.sleep(0.2)
        script = self.folder / "reader.py"
        script.write_text(READER)
        out, stop = self.folder / "states.jsonl", self.folder / "stop"
        argv = [sys.executable, str(script), os.environ["PAYLEDGER_FORMAT"], location, str(warehouse), str(out), str(stop), api]
        self.process = Process(argv, dict(os.environ))
        assert self.process.wait_for("reader ready", timeout=180), self.process.lines[-20:]
        self.wait_for_rounds(1)

    def wait_for_rounds(self, rounds: int) -> None:
        """Wait until the reader has gone through ``rounds`` more rounds of its loop (each ends
        with the server's answers for both merchants), so that it has read what was committed and
        published before the call."""
        out = self.folder / "states.jsonl"

        def served() -> int:
            return out.read_text().count('"kind": "served"') if out.exists() else 0

        wanted, deadline = served() + 2 * rounds, time.monotonic() + 120
        while served() < wanted:
            assert self.process.popen.poll() is None and time.monotonic() < deadline, self.process.lines[-20:]
            time.sleep(0.1)

    @staticmethod
    def _health(api: str) -> dict | None:
        try:
            with urllib.request.urlopen(f"{api}/v1/health", timeout=5) as response:
                return json.load(response)
        except OSError:
            return None

    def stop(self) -> list[dict]:
        """Stop the reader and the server; what the reader read, in order."""
        assert self.process is not None and self.server is not None, "the reader never started"
        (self.folder / "stop").touch()
        code = self.process.finish(timeout=120)
        self.server.popen.terminate()
        # uvicorn shuts down on SIGTERM, then re-raises the signal: it ends by it.
        assert self.server.finish(timeout=60) in (0, -signal.SIGTERM), self.server.lines[-20:]
        assert code == 0, [line for line in self.process.lines if "retry" in line or "Error" in line][:10]
        return [json.loads(line) for line in (self.folder / "states.jsonl").read_text().splitlines()]


def money(value) -> str:
    """An amount as text at the stored scale (four decimals), as the reader writes the view's."""
    return str(Decimal(value).quantize(Decimal("0.0001")))


def as_state(balances_by_key) -> list[list]:
    """{(merchant_id, currency): (available, pending, reserve)} in the reader's line format."""
    return sorted([m, c, money(a), money(p), money(r)] for (m, c), (a, p, r) in balances_by_key.items())


def test_each_build_is_readable_and_explained_and_never_seen_half_written(dbt, warehouse, tmp_path):
    spark = warehouse.spark
    target = dbt.artefacts / "target"
    # A reader in another process polls the view during builds 2 and 3 (new events, a policy
    # change) and a manual replay: every state it sees is the reference at a batch boundary.
    reader = CommittedStateReader(tmp_path)
    ids, states = three_builds(dbt, warehouse, after_first=lambda: reader.start(spark, warehouse.warehouse))
    try:
        replay = dbt.scenario_build("--selector", "balance_replay", "--vars", json.dumps({"replay_segment": "retail", "replay_from": "2026-02-01"}))
        reader.wait_for_rounds(2)
    finally:
        observed = reader.stop()
    boundaries = [as_state(expected_balances(state)) for state in states]
    committed = [read["state"] for read in observed if read["kind"] == "committed"]
    assert committed, "the reader read nothing"
    strays = [state for state in committed if state not in boundaries]
    assert not strays, f"the reader saw {len(strays)} states that are no batch boundary, first: {strays[0]}"
    distinct = {json.dumps(state) for state in committed}
    assert len(distinct) == len(boundaries), f"the reader saw {len(distinct)} of the {len(boundaries)} boundaries: it did not poll during the builds"
    # Write-audit-publish: each build's tests passed, so each published its version, which holds
    # the reference fold of exactly that build's inputs; the replay changed nothing, so published
    # nothing new. (The reader started after build 1 had published.)
    published = [(read["build"], read["state"]) for read in observed if read["kind"] == "published"]
    assert published == list(zip(ids, boundaries, strict=True)), [build for build, _ in published]
    # payledger serve answered from exactly one published build each time, with that build's
    # balances (decimal strings), and followed each publication.
    answers = [read for read in observed if read["kind"] == "served"]
    assert all(len(answer["builds"]) == 1 for answer in answers), [a for a in answers if len(a["builds"]) != 1][:3]
    boundary_of = dict(zip(ids, boundaries, strict=True))

    def expected(answer):
        return [row[1:] for row in boundary_of[answer["builds"][0]] if row[0] == answer["merchant_id"]]

    wrong = [a for a in answers if [[r[0], *map(money, r[1:])] for r in a["rows"]] != expected(a)]
    assert not wrong, wrong[:3]
    # Amounts are stored with four decimals and served with their currency's two (USD, EUR).
    assert {r[0] for a in answers for r in a["rows"]} <= {"USD", "EUR"}
    assert all(re.fullmatch(r"-?\d+\.\d\d", amount) for a in answers for r in a["rows"] for amount in r[1:]), answers[:3]
    assert list(dict.fromkeys(a["builds"][0] for a in answers)) == ids, "the server did not follow every publication"

    builds = {b.invocation_id: b for b in history.published_builds(spark)}
    assert list(builds) == [*ids, replay.invocation_id], f"the audit maps each build to a view version: {list(builds)} vs {ids}"
    # The replay changed no balance: it merged no row and its version is build 3's.
    assert builds[replay.invocation_id].view_version == builds[ids[-1]].view_version
    # The publication document keeps each publication, newest first, with the version the audit
    # recorded for that build.
    document = read_document(warehouse.warehouse, os.environ["PAYLEDGER_FORMAT"])
    kept = [document.current, *document.previous]
    assert [(p.invocation_id, p.version) for p in kept] == [(i, builds[i].view_version) for i in reversed(ids)], kept
    # Spark readers see the published version through the relation publication replaces; an
    # operator's rollback (payledger publish --version) re-points it and every reader, until the
    # next publication (here: the latest version published again).
    assert balances(spark.table(PUBLISHED_RELATION).collect()) == expected_balances(states[-1])
    runner = CliRunner()
    for version, state, build_id in ((builds[ids[1]].view_version, states[1], ids[1]), (builds[ids[-1]].view_version, states[-1], ids[-1])):
        outcome = runner.invoke(main, ["publish", "--version", str(version)])
        assert outcome.exit_code == 0 and json.loads(outcome.output)["invocation_id"] == build_id, outcome.output
        assert balances(spark.table(PUBLISHED_RELATION).collect()) == expected_balances(state)
        outcome = runner.invoke(main, ["balance", "t1", "--format", "json"])
        assert json.loads(outcome.output)["build"]["invocation_id"] == build_id, outcome.output
    outcome = runner.invoke(main, ["publish", "--version", "987654321"])
    assert outcome.exit_code == 1 and "is not a committed version" in outcome.output, outcome.output
    assert read_document(warehouse.warehouse, os.environ["PAYLEDGER_FORMAT"]).current.invocation_id == ids[-1], "a refused version changed nothing"

    # /v1/health: every landed event is classified in the published version, read from file statistics.
    health = PublishedBalances(warehouse.warehouse, os.environ["PAYLEDGER_FORMAT"])
    health.refresh()
    landed = spark.sql(f"select max(ingest_seq) from {LANDING_EVENTS}").first()[0]
    assert (health.health()["source_position"], health.health()["source_lag"]) == (landed, 0), health.health()

    # balance --build: each build's version holds exactly the reference fold of that build's inputs.
    for build_id, state in zip(ids, states, strict=True):
        got = {}
        for merchant_id in ("r1", "t1"):
            result = history.balance(spark, merchant_id, build=build_id, target_path=target)
            assert result.build.invocation_id == build_id
            got |= balances(result.rows)
        assert got == expected_balances(state), f"build {build_id}"
    assert balances(history.balance(spark, "r1", "USD", target_path=target).rows) == {
        key: value for key, value in expected_balances(states[-1]).items() if key == ("r1", "USD")
    }

    # --as-of between two builds' commits: the earlier build's state.
    published = [builds[i] for i in ids]
    for earlier, later, state in zip(published, published[1:], states, strict=False):
        between = earlier.committed_at + (later.committed_at - earlier.committed_at) / 2
        result = history.balance(spark, "r1", as_of=between, target_path=target)
        assert result.build.invocation_id == earlier.invocation_id
        assert balances(result.rows) == {k: v for k, v in expected_balances(state).items() if k[0] == "r1"}

    # explain: postings of the latest build add up to the view for the keys touched by the late
    # event, the duplicate and the policy change; reserve_pct follows the as-of rules as known then.
    # Without a JVM (payledger.postings, the default engine of payledger explain), an explanation
    # of a published build is the same as the macros' on Spark, row for row.
    table_format = os.environ["PAYLEDGER_FORMAT"]

    def same_without_jvm(explained, merchant_id, currency, by="event", build=None):
        """``explained`` (on Spark) after checking that the same build explained without a JVM is
        the same; ``build``: the publication to compare with when the build on Spark published
        nothing (the replay, which changed nothing)."""
        published = history.published_explain(warehouse.warehouse, table_format, merchant_id, currency, build=build or explained.build.invocation_id, by=by)
        assert (published.postings, published.view_row, published.rejects) == (explained.postings, explained.view_row, explained.rejects)
        assert build is not None or published.build == explained.build
        return explained

    latest, before_change = states[-1], states[1]
    for merchant_id, currency in (("r1", "USD"), ("t1", "USD"), ("r1", "EUR")):
        explained = history.published_explain(warehouse.warehouse, table_format, merchant_id, currency)
        assert explained.build.invocation_id == ids[-1], "the latest publication by default"
        assert explained.differences() == {}, explained.differences()
        want = latest.expected()[(merchant_id, currency)]
        assert (explained.totals["available_balance"], explained.totals["pending_balance"], explained.totals["reserve_hold"]) == (
            want.available,
            want.pending,
            want.reserve,
        )
        for posting in explained.postings:
            if posting["event_type"] == "funds_released":
                day = posting["event_time"].date()
                assert posting["reserve_pct"] == reference.reserve_pct(merchant_id, day, latest.segments, latest.policies), posting
    latest_r1 = same_without_jvm(history.explain(spark, "r1", "USD", target_path=target), "r1", "USD", build=ids[-1])
    assert latest_r1.build.invocation_id == replay.invocation_id, "on Spark, the latest build the audit recorded by default"
    r1 = {p["event_id"]: p for p in latest_r1.postings}
    assert set(r1) == {"r1-c1", "r1-f1", "r1-f2", "r1-late"}, "the duplicate counts once, the late event counts"
    assert r1["r1-f2"]["reserve_pct"] == Decimal("0.2000") and r1["r1-f1"]["reserve_pct"] == Decimal("0.1000")
    assert r1["r1-f2"]["segment"] == "retail" and r1["r1-f2"]["policy_effective_from_date"] == dt.date(2026, 3, 5)
    # As of build 2 the raise was not known: the same release held 10%.
    old = {p["event_id"]: p for p in same_without_jvm(history.explain(spark, "r1", "USD", build=ids[1], target_path=target), "r1", "USD").postings}
    assert old["r1-f2"]["reserve_pct"] == reference.reserve_pct("r1", dt.date(2026, 3, 10), before_change.segments, before_change.policies)
    assert old["r1-f2"]["reserve_pct"] == Decimal("0.1000")
    rejects = latest_r1.rejects
    assert [(r["event_id"], r["rejection_reason"]) for r in rejects] == [("r1-f1", "exact_duplicate")]
    assert same_without_jvm(history.explain(spark, "r1", "USD", build=ids[0], target_path=target), "r1", "USD").rejects == [], (
        "build 1 had not seen the duplicate"
    )
    by_day = same_without_jvm(history.explain(spark, "r1", "USD", by="day", build=ids[-1], target_path=target), "r1", "USD", by="day")
    assert by_day.differences() == {} and [d["event_date"] for d in by_day.postings] == sorted(d["event_date"] for d in by_day.postings)

    # Errors: malformed values are usage errors (exit 2); a moment, build or key without a balance
    # is an error naming what is available (exit 1).
    unknown_build = "00000000-0000-0000-0000-000000000000"
    first = published[0].committed_at
    for args, status, words in [
        (["balance", "r1; drop table x"], 2, "merchant id must be"),
        (["balance", "r1", "--currency", "usd"], 2, "currency must be"),
        (["balance", "r1", "--as-of", "yesterday"], 2, "ISO timestamp"),
        (["balance", "r1", "--build", "not-a-build"], 2, "invocation id"),
        (["balance", "r1", "--as-of", "2026-01-01", "--build", ids[0]], 2, "not both"),
        (["balance", "r1", "--build", unknown_build], 1, "published no version"),
        (["balance", "nobody"], 1, "has no balance"),
        (["balance", "r1", "--currency", "GBP"], 1, "it holds EUR, USD"),
        (["balance", "r1", "--as-of", (first - dt.timedelta(hours=1)).isoformat()], 1, "before the first build"),
        (["balance", "r1", "--as-of", "2999-01-01T00:00:00Z"], 1, "in the future"),
        (["explain", "r1", "GBP"], 1, "it holds EUR, USD"),
        (["explain", "r1", "USD", "--by", "week"], 2, "week"),
    ]:
        outcome = runner.invoke(main, args)
        assert outcome.exit_code == status, (args, outcome.output, outcome.exception)
        assert words in outcome.output, (args, outcome.output)
    assert "available: from build " + ids[0] in runner.invoke(main, ["balance", "r1", "--build", unknown_build]).output

    outcome = runner.invoke(main, ["balance", "r1", "--build", ids[1], "--format", "json"])
    assert outcome.exit_code == 0, outcome.output
    document = json.loads(outcome.output)
    assert document["build"]["invocation_id"] == ids[1]
    assert {(r["merchant_id"], r["currency"]): tuple(Decimal(r[c]) for c in BALANCE) for r in document["rows"]} == {
        k: v for k, v in expected_balances(states[1]).items() if k[0] == "r1"
    }
    # The same answer through Spark's time travel: the publication records the version, commit time
    # and watermarks the audit recorded for the build.
    outcome = runner.invoke(main, ["balance", "r1", "--build", ids[1], "--format", "json", "--engine", "spark"])
    assert outcome.exit_code == 0 and json.loads(outcome.output) == document, (outcome.output, document)
    outcome = runner.invoke(main, ["explain", "r1", "USD", "--format", "json"])
    assert outcome.exit_code == 0 and json.loads(outcome.output)["matches_view"] is True, outcome.output
    on_spark = runner.invoke(main, ["explain", "r1", "USD", "--build", ids[-1], "--format", "json", "--engine", "spark"])
    assert on_spark.exit_code == 0 and json.loads(on_spark.output) == json.loads(outcome.output), (on_spark.output, outcome.output)
    outcome = runner.invoke(main, ["explain", "r1", "USD", "--format", "csv"])
    assert outcome.exit_code == 0, outcome.output
    lines = list(csv.DictReader(io.StringIO(outcome.stdout)))
    kinds = [line["kind"] for line in lines]
    assert kinds == ["posting"] * 4 + ["total", "view", "rejected"], kinds
    assert [lines[4][c] for c in BALANCE] == [lines[5][c] for c in BALANCE] == [str(v) for v in expected_balances(states[-1])[("r1", "USD")]]

    # Retention: once maintenance keeps no history, the first builds' versions cannot be read; the
    # error says what is available. The latest build still reads (only maintenance came after it).
    maintain_tables(spark, warehouse.warehouse, every_commits=0, retention_hours=0, tables=[VIEW])
    outcome = runner.invoke(main, ["balance", "r1", "--build", ids[0]])
    assert outcome.exit_code == 1 and "beyond the retained history" in outcome.output, outcome.output
    assert f"available: from build {ids[-1]}" in outcome.output, outcome.output
    outcome = runner.invoke(main, ["publish", "--version", str(builds[ids[0]].view_version)])
    assert outcome.exit_code == 1 and "beyond the retained history" in outcome.output, outcome.output
    # The publication follows maintenance: its rows are read from the compacted version.
    outcome = runner.invoke(main, ["balance", "r1", "--build", ids[-1], "--format", "json"])
    assert outcome.exit_code == 0, outcome.output
    assert {(r["merchant_id"], r["currency"]): tuple(Decimal(r[c]) for c in BALANCE) for r in json.loads(outcome.output)["rows"]} == {
        k: v for k, v in expected_balances(states[-1]).items() if k[0] == "r1"
    }
    assert balances(history.balance(spark, "r1", build=ids[-1], target_path=target).rows) == {
        k: v for k, v in expected_balances(states[-1]).items() if k[0] == "r1"
    }
