"""``payledger load`` and ``payledger sql``: contract checks that load nothing on bad files; a widened
landing table and the staging view over it; the CLI's error style, version and quiet output."""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import json
import os
import subprocess
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from payledger.cli import main
from payledger.formats import session_format
from payledger.load import LoadError, load_file
from payledger.warehouse import LANDING_EVENTS, drop_project_schemas
from tests.processes import ROOT, executable
from tests.support import Landing, event, merchant, policy

pytestmark = pytest.mark.integration


def landed(warehouse, table: str) -> int:
    return warehouse.rows(f"select count(*) as n from payledger_raw.{table}")[0]["n"]


ONE_EVENT = pytest.mark.xdist_group("one_event")


@pytest.fixture
def one_event(spark, tmp_path) -> Landing:
    """A warehouse whose landed events are one event, ``a`` (other tables as they are). The tests
    of the ``one_event`` xdist group (one worker, one after the other) refuse files and load
    nothing, so each usually finds it as the one before left it; otherwise every project schema is
    dropped and the event landed again."""
    warehouse = Landing(spark, tmp_path / "files", Path(os.environ["PAYLEDGER_WAREHOUSE"]))
    landed_ids = [r.event_id for r in spark.sql(f"select event_id from {LANDING_EVENTS}").collect()] if spark.catalog.tableExists(LANDING_EVENTS) else []
    if landed_ids != ["a"]:
        drop_project_schemas(spark)
        warehouse.load("payment_events", [event("a", "m1", "capture_settled", "1.00", "2026-01-01 00:00:00")])
    return warehouse


def test_events_get_ingest_positions_in_file_order(warehouse):
    warehouse.load("payment_events", [event("a", "m1", "capture_settled", "1.00", "2026-01-01 00:00:00")])
    warehouse.load("payment_events", [event(f"e{i}", "m1", "capture_settled", "1.00", "2026-01-01 00:00:00") for i in range(5)])
    rows = warehouse.rows("select event_id, ingest_seq from payledger_raw.payment_events order by ingest_seq")
    assert [r["event_id"] for r in rows] == ["a", "e0", "e1", "e2", "e3", "e4"]
    assert [r["ingest_seq"] for r in rows] == [1, 2, 3, 4, 5, 6]


def test_csv_events_load_with_parsed_types(warehouse, tmp_path):
    path = tmp_path / "events.csv"
    path.write_text(
        "event_id,merchant_id,currency,event_type,amount,event_time\n"
        "c1,m1,USD,capture_settled,12.34,2026-10-01T12:00:00Z\n"
        "c2,m1,USD,capture_settled,,2026-10-01 13:00:00\n"
        "c3,m1,EUR,capture_settled,1.00,2026-10-01T12:00:00+01:00\n"
        "c4,m1,EUR,capture_settled,1.00,2026-10-01 23:30:00.25-0530\n"
        "c5,m1,EUR,capture_settled,1.00,2026-10-02\n"
    )
    assert load_file(warehouse.spark, "payment_events", path, warehouse.warehouse) == 5
    rows = warehouse.rows("select event_id, amount, cast(event_time as string) t from payledger_raw.payment_events order by ingest_seq")
    assert rows == [
        {"event_id": "c1", "amount": Decimal("12.34"), "t": "2026-10-01 12:00:00"},
        {"event_id": "c2", "amount": None, "t": "2026-10-01 13:00:00"},
        {"event_id": "c3", "amount": Decimal("1.00"), "t": "2026-10-01 11:00:00"},  # offsets become UTC
        {"event_id": "c4", "amount": Decimal("1.00"), "t": "2026-10-02 05:00:00.25"},
        {"event_id": "c5", "amount": Decimal("1.00"), "t": "2026-10-02 00:00:00"},
    ]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing.csv", "event_id,merchant_id,currency,event_type,amount\nx,m,USD,payout_paid,1\n", "missing \\['event_time'\\]"),
        ("extra.csv", "event_id,merchant_id,currency,event_type,amount,event_time,ingest_seq\n", "unexpected \\['ingest_seq'\\]"),
        ("amount.csv", "event_id,merchant_id,currency,event_type,amount,event_time\nx,m,USD,payout_paid,ten,2026-01-01 00:00:00\n", "column amount"),
        ("time.csv", "event_id,merchant_id,currency,event_type,amount,event_time\nx,m,USD,payout_paid,1,yesterday\n", "event_time.*'yesterday' is not an ISO"),
        ("empty.csv", "", "cannot read|no rows"),
        ("header_only.csv", "event_id,merchant_id,currency,event_type,amount,event_time\n", "no rows"),
        ("garbage.csv", '"unterminated,\x00\x01\n1,2\n', "cannot read|wrong columns"),
        ("not_parquet.parquet", "this is not parquet", "cannot read"),
        ("events.json", "{}", "expected a .parquet, .csv, .jsonl or .ndjson"),
        ("events.jsonl", '{"event_id": "x"}\nnot json\n', "line 2 is not JSON"),
    ],
)
@ONE_EVENT
def test_bad_event_files_fail_clearly_and_load_nothing(one_event, tmp_path, name, content, message):
    warehouse = one_event
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(LoadError, match=message):
        load_file(warehouse.spark, "payment_events", path, warehouse.warehouse)
    assert landed(warehouse, "payment_events") == 1


def create_two_decimal_events_table(spark) -> None:
    """The events landing table as warehouses made before amounts landed as decimal(38,18) hold it:
    ``amount decimal(18,2)``, empty."""
    spark.sql("create database if not exists payledger_raw")
    spark.sql(
        "create table payledger_raw.payment_events (event_id string, merchant_id string, currency string, event_type string,"
        f" amount decimal(18,2), event_time timestamp, ingested_at timestamp, ingest_seq bigint) using {session_format(spark)}"
    )


def test_an_older_warehouses_two_decimal_amounts_are_widened_keeping_every_row_then_three_decimals_load(warehouse, tmp_path):
    """Landing tables made before amounts landed as decimal(38,18) hold decimal(18,2): the next load
    rewrites the events table, every row and ingest_seq kept, and its file's KWD 1.235 loads."""
    spark = warehouse.spark
    create_two_decimal_events_table(spark)
    spark.sql(
        "insert into payledger_raw.payment_events values ('o1', 'm1', 'USD', 'capture_settled', 12.50, timestamp'2026-01-01 00:00:00',"
        " timestamp'2026-01-02 00:00:00', 1), ('o2', 'm1', 'USD', 'payout_paid', 99999999999999.99, null, timestamp'2026-01-02 00:00:00', 2)"
    )
    path = tmp_path / "events.csv"
    path.write_text("event_id,merchant_id,currency,event_type,amount,event_time\nk1,m1,KWD,capture_settled,1.235,2026-10-01T12:00:00Z\n")
    assert load_file(spark, "payment_events", path, warehouse.warehouse) == 1
    assert spark.table("payledger_raw.payment_events").schema["amount"].dataType.simpleString() == "decimal(38,18)"
    rows = warehouse.rows("select event_id, amount, ingest_seq, cast(ingested_at as string) at from payledger_raw.payment_events order by ingest_seq")
    assert [(r["event_id"], r["amount"], r["ingest_seq"]) for r in rows] == [
        ("o1", Decimal("12.5"), 1),
        ("o2", Decimal("99999999999999.99"), 2),
        ("k1", Decimal("1.235"), 3),
    ]
    assert [r["at"] for r in rows[:2]] == ["2026-01-02 00:00:00"] * 2


def test_a_view_is_kept_while_its_query_and_columns_stay_and_created_again_when_either_changes(dbt, warehouse, tmp_path):
    """On Delta, dbt keeps a view model whose stored query and columns are the model's (the
    override of dbt-spark's `create_view_as`): a property set on the view survives the next run.
    The loader widening the landed amounts changes the staging view's columns, not its query: the
    next run creates it again (the property is gone) with the widened type. --full-refresh always
    creates it. Iceberg views are created again on every run (a replace keeps an Iceberg view's
    properties, so only the widened type is checked there)."""
    spark = warehouse.spark
    view = "payledger_staging.stg_payledger__payment_events"
    create_two_decimal_events_table(spark)

    def run_view(*args: str) -> dict[str, str]:
        """Runs the view's model, then marks the view; returns the view's properties before the mark."""
        dbt("run", "--select", "stg_payledger__payment_events", *args)
        properties = {r["key"]: r["value"] for r in warehouse.rows(f"show tblproperties {view}")}
        spark.sql(f"alter view {view} set tblproperties ('payledger.test_mark' = 'kept')")
        return properties

    def amount_type() -> str:
        return spark.table(view).schema["amount"].dataType.simpleString()

    assert "payledger.test_mark" not in run_view()
    assert amount_type() == "decimal(18,2)"
    unchanged = run_view()
    path = tmp_path / "events.csv"
    path.write_text("event_id,merchant_id,currency,event_type,amount,event_time\nk1,m1,KWD,capture_settled,1.235,2026-10-01T12:00:00Z\n")
    assert load_file(spark, "payment_events", path, warehouse.warehouse) == 1  # widens amount
    widened = run_view()
    assert amount_type() == "decimal(38,18)"
    assert warehouse.rows(f"select amount from {view}") == [{"amount": Decimal("1.235")}]
    if session_format(spark) == "delta":
        assert unchanged.get("payledger.test_mark") == "kept", "an unchanged view was created again"
        assert "payledger.test_mark" not in widened, "a view whose columns changed was kept"
        assert "payledger.test_mark" not in run_view("--full-refresh"), "--full-refresh kept the view"


def test_parquet_times_in_any_zone_and_unit_load_as_utc_microseconds(warehouse, tmp_path):
    """pandas writes nanoseconds, often zone-aware: the instant is kept, digits below the microsecond
    (Spark's precision) are dropped, and a zone-less time is UTC."""
    path = tmp_path / "pandas.parquet"
    ns = 1_790_852_400_123_456_789  # 2026-10-01 11:00:00.123456789 UTC
    times = {
        "n1": pa.array([ns], pa.timestamp("ns", tz="Europe/Berlin")),
        "n2": pa.array([ns], pa.timestamp("ns")),
        "n3": pa.array([ns // 1000], pa.timestamp("us", tz="America/New_York")),
    }
    for event_id, time in times.items():
        row = {
            "event_id": [event_id],
            "merchant_id": ["m"],
            "currency": ["USD"],
            "event_type": ["payout_paid"],
            "amount": pa.array([Decimal("1.00")], pa.decimal128(9, 2)),
        }
        pq.write_table(pa.table({**row, "event_time": time}), path)
        assert load_file(warehouse.spark, "payment_events", path, warehouse.warehouse) == 1
    rows = warehouse.rows("select event_id, cast(event_time as string) t from payledger_raw.payment_events order by ingest_seq")
    assert rows == [{"event_id": event_id, "t": "2026-10-01 11:00:00.123456"} for event_id in times]


def test_float_money_and_wrong_parquet_types_are_refused(warehouse, tmp_path):
    path = tmp_path / "floats.parquet"
    pq.write_table(
        pa.table(
            {
                "event_id": ["x"],
                "merchant_id": ["m"],
                "currency": ["USD"],
                "event_type": ["payout_paid"],
                "amount": [1.1],
                "event_time": pa.array([0], pa.timestamp("us")),
            }
        ),
        path,
    )
    with pytest.raises(LoadError, match="never a float"):
        load_file(warehouse.spark, "payment_events", path, warehouse.warehouse)


def test_policies_upsert_current_state_and_refuse_bad_rows(warehouse):
    assert warehouse.load("reserve_policies", [policy("retail", "0.1000", "2026-01-01"), policy("travel", "0.0500", "2026-01-01")]) == 2
    # Re-sending an unchanged row writes nothing; a changed one overwrites the current state.
    assert warehouse.load("reserve_policies", [policy("retail", "0.2000", "2026-02-01"), policy("travel", "0.0500", "2026-01-01")]) == 1
    rows = warehouse.rows("select segment, reserve_pct from payledger_raw.reserve_policies order by segment")
    assert rows == [{"segment": "retail", "reserve_pct": Decimal("0.2000")}, {"segment": "travel", "reserve_pct": Decimal("0.0500")}]
    with pytest.raises(LoadError, match=r"above 1 is ambiguous.*0\.1.*10%"):
        warehouse.load("reserve_policies", [policy("retail", "1.5000", "2026-01-01")])
    with pytest.raises(LoadError, match="within \\[0, 1\\]"):
        warehouse.load("reserve_policies", [policy("retail", "-0.1000", "2026-01-01")])
    with pytest.raises(LoadError, match="must be unique"):
        warehouse.load("reserve_policies", [policy("retail", "0.1", "2026-01-01"), policy("retail", "0.2", "2026-01-01")])
    with pytest.raises(LoadError, match="is empty"):
        warehouse.load("merchants", [{"merchant_id": "m1", "segment": None, "segment_effective_from": None}])
    assert landed(warehouse, "merchants") == 0
    # The load log holds one row per file loaded (its name, rows in it, rows written), none per refusal.
    path = warehouse.write("reserve_policies", [policy("retail", "0.2000", "2026-02-01")])
    quoted = path.rename(path.with_name('it\'s a "policy" file.parquet'))
    assert load_file(warehouse.spark, "reserve_policies", quoted, warehouse.warehouse) == 0
    deliveries = warehouse.rows("select table_name, file_name, rows_in_file, rows_written from payledger_raw.load_log order by loaded_at")
    assert [tuple(d.values()) for d in deliveries] == [
        ("reserve_policies", "reserve_policies-0.parquet", 2, 2),
        ("reserve_policies", "reserve_policies-1.parquet", 2, 1),
        ("reserve_policies", quoted.name, 1, 0),
    ]


def test_a_changed_row_going_back_in_time_for_its_key_is_refused_and_nothing_loads(warehouse):
    assert (
        warehouse.load(
            "merchants", [merchant("m1", "retail", "2026-01-01", "2026-10-02 00:00:00"), merchant("m2", "retail", "2026-01-01", "2026-10-02 00:00:00")]
        )
        == 2
    )
    # Another table's timestamps are no concern of this one: policies from an older clock load.
    assert warehouse.load("reserve_policies", [policy("retail", "0.1000", "2026-01-01", "2020-01-01 00:00:00")]) == 1
    stored = warehouse.rows("select * from payledger_raw.merchants order by merchant_id")
    for stamp in ("2026-10-01 00:00:00", "2026-10-02 00:00:00"):  # older, and equal: not later
        path = warehouse.write("merchants", [merchant("m1", "travel", "2026-01-01", stamp), merchant("m3", "retail", "2026-01-01", "2026-10-03 00:00:00")])
        with pytest.raises(LoadError) as refused:
            load_file(warehouse.spark, "merchants", path, warehouse.warehouse)
        message = str(refused.value)
        for part in (str(path), "merchant_id 'm1'", f"updated_at {stamp}", "latest loaded updated_at 2026-10-02 00:00:00", "Nothing was loaded"):
            assert part in message, (part, message)
        assert warehouse.rows("select * from payledger_raw.merchants order by merchant_id") == stored
    # An unchanged row with an older updated_at (a full export) is fine and not rewritten; a changed
    # row without updated_at gets the load time.
    loaded_from = dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0) - dt.timedelta(seconds=1)
    assert warehouse.load("merchants", [merchant("m1", "retail", "2026-01-01", "2026-09-01 00:00:00"), merchant("m2", "travel", "2026-02-01")]) == 1
    rows = {r["merchant_id"]: r for r in warehouse.rows("select * from payledger_raw.merchants")}
    assert rows["m1"] == next(r for r in stored if r["merchant_id"] == "m1")
    assert rows["m2"]["segment"] == "travel" and rows["m2"]["updated_at"] >= loaded_from


def test_sql_command_prints_csv_and_json(warehouse):
    warehouse.load("reserve_policies", [policy("retail", "0.1000", "2026-01-01")])
    runner = CliRunner()
    query = "select segment, reserve_pct, effective_from from payledger_raw.reserve_policies"
    as_csv = runner.invoke(main, ["sql", query])
    assert as_csv.exit_code == 0, as_csv.output
    assert as_csv.output.splitlines() == ["segment,reserve_pct,effective_from", "retail,0.1000,2026-01-01"]
    as_json = runner.invoke(main, ["sql", query, "--format", "json"])
    assert json.loads(as_json.output) == [{"segment": "retail", "reserve_pct": "0.1000", "effective_from": "2026-01-01"}]
    broken = runner.invoke(main, ["sql", "select * from nowhere"])
    assert broken.exit_code == 1 and broken.output.startswith("Error: ") and "nowhere" in broken.output, broken.output


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing.csv", "event_id,merchant_id,currency,event_type,amount\nx,m,USD,payout_paid,1\n", "missing ['event_time']"),
        ("mistyped.csv", "event_id,merchant_id,currency,event_type,amount,event_time\nx,m,USD,payout_paid,1,soon\n", "column event_time"),
        ("empty.parquet", "", "cannot read"),
        ("not_parquet.parquet", "PAR1 but not really", "cannot read"),
        ("garbage.csv", '\x00\x01\x02,,\n"\n', "cannot read"),
    ],
)
@ONE_EVENT
def test_load_command_exits_non_zero_with_a_clear_message_and_loads_nothing(one_event, tmp_path, name, content, message):
    warehouse = one_event
    path = tmp_path / name
    path.write_text(content)
    result = CliRunner().invoke(main, ["load", "events", str(path)])
    assert result.exit_code != 0
    assert message in result.output, result.output
    assert landed(warehouse, "payment_events") == 1


@pytest.mark.parametrize(
    ("args", "status", "start", "message"),
    [
        (["load", "events", "no/such/file.parquet"], 1, "Error: ", "no such file"),
        (["sql", "select * from payledger_raw.no_such_table"], 1, "Error: ", "no_such_table"),
        (["balance", "m1", "--as-of", "yesterday"], 2, "Usage: ", "expected an ISO timestamp"),
        (["balance", "m1", "--as-of", "2026-11-01", "--build", "b1"], 2, "Usage: ", "not both"),
        (["load", "refunds", "file.csv"], 2, "Usage: ", "'refunds' is not one of"),
        (["explain", "m1"], 2, "Usage: ", "Missing argument 'CURRENCY'"),
        (["generate", "--out", "{tmp}/batch", "--continue-from", "{tmp}"], 1, "Error: ", "events.parquet"),
    ],
)
def test_every_command_fails_in_one_style(warehouse, tmp_path, args, status, start, message):
    """An error is ``Error: <message>`` and exit 1; a usage error shows the usage and exits 2."""
    result = CliRunner().invoke(main, [arg.format(tmp=tmp_path) for arg in args])
    assert result.exit_code == status, result.output
    assert result.output.startswith(start) and message in result.output, result.output
    assert "Traceback" not in result.output


def test_version_is_the_installed_package_version():
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"payledger, version {importlib.metadata.version('payledger')}\n"


@pytest.mark.slow
def test_a_command_prints_only_its_own_output_unless_verbose(tmp_path):
    """A fresh process with its own warehouse: ``payledger sql`` writes the result and nothing else
    (no Spark start-up banner or log lines); ``--verbose`` brings Spark's log messages back."""
    env = {key: value for key, value in os.environ.items() if key != "PAYLEDGER_SPARK_LOG_LEVEL"}
    env["PAYLEDGER_WAREHOUSE"] = str(tmp_path / "warehouse")

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([executable("payledger"), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)

    quiet = run("sql", "select 1 as one")
    assert quiet.returncode == 0, quiet.stderr
    assert (quiet.stdout, quiet.stderr) == ("one\n1\n", "")
    verbose = run("--verbose", "sql", "select 1 as one")
    assert verbose.returncode == 0, verbose.stderr
    assert verbose.stdout == "one\n1\n"
    assert " INFO SparkContext: Running Spark version" in verbose.stderr, verbose.stderr[-2000:]
