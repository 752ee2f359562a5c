"""Source files as exports write them, read by the loader's conversion (``payledger.load``; pyarrow
only, no Spark): dates given as date-times at midnight UTC, ``reserve_pct`` as a fraction or a
percentage, times as BigQuery and pandas write them, and events as JSON Lines (plain or
gzip-compressed, with or without a byte order mark). Each refused form is named, with its row, in
the error. Loading into the landing tables is ``tests/integration/test_loader_and_cli.py``."""

from __future__ import annotations

import datetime as dt
import gzip
import re
from decimal import Decimal
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from payledger.contract import EVENT_FILE_SCHEMA, MERCHANT_FILE_SCHEMA, POLICY_FILE_SCHEMA
from payledger.load import LoadError, _converted

POLICY_HEADER = "segment,reserve_pct,effective_from\n"


def rows(path, schema, optional=frozenset({"updated_at"})) -> list[dict]:
    """The file's rows as the loader stages them (contract types, ``_file_row`` dropped)."""
    table = pa.Table.from_batches(list(_converted(path, schema, set(optional))), schema=None)
    return table.drop_columns(["_file_row"]).to_pylist()


def test_dates_given_as_date_times_at_midnight_utc_are_those_dates(tmp_path):
    path = tmp_path / "merchants.csv"
    path.write_text(
        "merchant_id,segment,segment_effective_from\n"
        "m1,retail,2026-01-01T00:00:00Z\n"
        "m2,retail,2026-01-02 00:00:00+00:00\n"
        "m3,retail,2026-01-03T00:00:00.000\n"
        "m4,retail,2026-01-04\n"
    )
    assert [r["segment_effective_from"] for r in rows(path, MERCHANT_FILE_SCHEMA)] == [dt.date(2026, 1, d) for d in (1, 2, 3, 4)]


@pytest.mark.parametrize("value", ["2026-01-01T05:00:00Z", "2026-01-01T00:00:00+01:00", "2026-01-01T00:00:00-05:00", "01/02/2026"])
def test_any_other_time_or_offset_is_refused_naming_the_row_and_value(tmp_path, value):
    path = tmp_path / "policies.csv"
    path.write_text(f"{POLICY_HEADER}retail,0.1,2026-01-01\ntravel,0.1,{value}\n")
    with pytest.raises(LoadError, match=re.escape(f"column effective_from, row 2: '{value}' is not a date: give a date")):
        rows(path, POLICY_FILE_SCHEMA)


def test_parquet_timestamps_in_a_date_column_must_be_midnight_utc(tmp_path):
    pct = pa.array([Decimal("0.1"), Decimal("0.2")], pa.decimal128(5, 4))
    midnight = pa.array([dt.datetime(2026, 1, 1), dt.datetime(2026, 2, 1)], pa.timestamp("us"))
    path = tmp_path / "policies.parquet"
    pq.write_table(pa.table({"segment": ["a", "b"], "reserve_pct": pct, "effective_from": midnight}), path)
    assert [r["effective_from"] for r in rows(path, POLICY_FILE_SCHEMA)] == [dt.date(2026, 1, 1), dt.date(2026, 2, 1)]
    paris = pa.array([dt.datetime(2026, 1, 1, tzinfo=dt.UTC), dt.datetime(2026, 1, 31, 23, tzinfo=dt.UTC)], pa.timestamp("us", tz="Europe/Paris"))
    pq.write_table(pa.table({"segment": ["a", "b"], "reserve_pct": pct, "effective_from": paris}), path)
    with pytest.raises(LoadError, match=re.escape("row 2: '2026-01-31T23:00:00+00:00' is not a date")):
        rows(path, POLICY_FILE_SCHEMA)


def test_reserve_pct_is_a_fraction_or_a_percentage(tmp_path):
    path = tmp_path / "policies.csv"
    path.write_text(f"{POLICY_HEADER}a,10%,2026-01-01\nb,0.1,2026-01-01\nc,12.5%,2026-01-01\nd, 0.75 ,2026-01-01\ne,100%,2026-01-01\nf,0%,2026-01-01\n")
    assert [r["reserve_pct"] for r in rows(path, POLICY_FILE_SCHEMA)] == [Decimal(v) for v in ("0.1", "0.1", "0.125", "0.75", "1", "0")]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("10", "'10' is ambiguous: give a fraction [(]0.1[)] or a percentage [(]10%[)]"),
        ("1.5", "'1.5' is ambiguous"),
        ("150%", "'150%' is above 100%"),
        ("12.345%", "cannot be read as decimal128[(]5, 4[)]"),
        ("ten", "cannot be read as decimal128[(]5, 4[)]"),
    ],
)
def test_refused_reserve_pct_forms_are_named(tmp_path, value, message):
    path = tmp_path / "policies.csv"
    path.write_text(f"{POLICY_HEADER}a,0.1,2026-01-01\nb,{value},2026-01-01\n")
    with pytest.raises(LoadError, match=f"column reserve_pct.*{message}"):
        rows(path, POLICY_FILE_SCHEMA)


EVENT_LINES = (
    '{"event_id": "e1", "merchant_id": "m1", "currency": "USD", "event_type": "capture_settled", "amount": 12.50,'
    ' "event_time": "2026-01-01T10:00:00+01:00"}\n'
    "\n"
    '{"event_id": "e2", "merchant_id": "m1", "currency": "USD", "event_type": "payout_paid", "amount": "12345678901234567890.123456789012345678",'
    ' "event_time": "2026-01-01 11:00:00"}\n'
    '{"event_id": "e3", "merchant_id": 42, "currency": "USD", "event_type": "payout_paid", "amount": 0.1, "event_time": null}\n'
)


@pytest.mark.parametrize("name", ["events.jsonl", "events.ndjson", "events.jsonl.gz", "EVENTS.NDJSON.GZ"])
def test_json_lines_events_load_with_the_types_of_csv(tmp_path, name):
    path = tmp_path / name
    if name.lower().endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as out:
            out.write(EVENT_LINES)
    else:
        path.write_text(EVENT_LINES)
    got = rows(path, EVENT_FILE_SCHEMA, optional=frozenset())
    # Numbers keep their exact digits (never through a float); a number in a text column is text.
    assert [(r["event_id"], r["merchant_id"], r["amount"]) for r in got] == [
        ("e1", "m1", Decimal("12.50")),
        ("e2", "m1", Decimal("12345678901234567890.123456789012345678")),  # lands as sent; the build rejects it
        ("e3", "42", Decimal("0.10")),
    ]
    assert got[0]["event_time"] == dt.datetime(2026, 1, 1, 9, tzinfo=dt.UTC) and got[2]["event_time"] is None


@pytest.mark.parametrize("name", ["events.jsonl", "events.jsonl.gz"])
def test_json_lines_as_windows_tools_write_them_read_as_plain_ones(tmp_path, name):
    """A UTF-8 byte order mark and CRLF line ends (.NET's UTF-8 writer, PowerShell 5's
    ``Out-File -Encoding utf8``) change nothing: the same rows as the plain file."""
    plain, exported = tmp_path / "plain.jsonl", tmp_path / name
    plain.write_text(EVENT_LINES)
    data = b"\xef\xbb\xbf" + EVENT_LINES.replace("\n", "\r\n").encode()
    exported.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    expected = rows(plain, EVENT_FILE_SCHEMA, optional=frozenset())
    assert [r["event_id"] for r in expected] == ["e1", "e2", "e3"]
    assert rows(exported, EVENT_FILE_SCHEMA, optional=frozenset()) == expected


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"event_id": "a"}\n[1, 2]\n', "line 2 is a JSON list, not an object of columns"),
        ('{"event_id": true}\n', "line 1, column event_id: a JSON bool"),
        ('{"event_id": "a", "amount": NaN}\n', "line 1 is not JSON: NaN is not a number"),
        ('{"event_id": "a", "extra": "x"}\n', "unexpected \\['extra'\\]"),
        # Amounts land as decimal(38,18) (the build rejects what no currency allows): a 19th decimal,
        # or a 21st integer digit, is beyond it.
        (EVENT_LINES.replace("12.50", "1.0000000000000000001"), r"column amount .*cannot be read as decimal128\(38, 18\)"),
        (EVENT_LINES.replace("12.50", "123456789012345678901"), r"column amount .*cannot be read as decimal128\(38, 18\)"),
    ],
)
def test_bad_json_lines_are_refused_naming_the_line_or_column(tmp_path, content, message):
    path = tmp_path / "events.jsonl"
    path.write_text(content)
    with pytest.raises(LoadError, match=message):
        rows(path, EVENT_FILE_SCHEMA, optional=frozenset())


EVENT_CSV = (
    "event_id,merchant_id,currency,event_type,amount,event_time\n"
    "e1,m1,USD,capture_settled,1250.00,2026-10-01T09:15:00Z\n"
    "e2,m1,KWD,capture_settled,1.235,2026-10-02T09:15:00+02:00\n"
)


def test_a_csv_as_spreadsheets_export_it_reads_as_a_plain_one(tmp_path):
    """A UTF-8 byte order mark, CRLF line ends and every field quoted (Excel's and many banks' CSV)
    change nothing: the same rows as the plain file, the first column's name included."""
    plain, exported = tmp_path / "plain.csv", tmp_path / "exported.csv"
    plain.write_text(EVENT_CSV)
    quoted = "\r\n".join(",".join(f'"{field}"' for field in line.split(",")) for line in EVENT_CSV.splitlines())
    exported.write_bytes(b"\xef\xbb\xbf" + (quoted + "\r\n").encode())
    expected = rows(plain, EVENT_FILE_SCHEMA, optional=frozenset())
    assert [r["event_id"] for r in expected] == ["e1", "e2"] and expected[1]["amount"] == Decimal("1.235")
    assert rows(exported, EVENT_FILE_SCHEMA, optional=frozenset()) == expected


@pytest.mark.parametrize(
    ("text", "instant"),
    [
        # BigQuery's CSV of a TIMESTAMP column.
        ("2026-10-01 09:15:00 UTC", dt.datetime(2026, 10, 1, 9, 15, tzinfo=dt.UTC)),
        ("2026-10-01 09:15:00.123456 UTC", dt.datetime(2026, 10, 1, 9, 15, 0, 123456, tzinfo=dt.UTC)),
        # pandas' nanoseconds: truncated to the microsecond, as a Parquet timestamp[ns] is.
        ("2026-10-01T09:15:00.123456789Z", dt.datetime(2026, 10, 1, 9, 15, 0, 123456, tzinfo=dt.UTC)),
        ("2026-10-01 11:15:00.999999999+02:00", dt.datetime(2026, 10, 1, 9, 15, 0, 999999, tzinfo=dt.UTC)),
    ],
)
def test_times_as_exports_write_them_are_their_utc_instants(tmp_path, text, instant):
    path = tmp_path / "events.csv"
    path.write_text(f"{EVENT_CSV.splitlines()[0]}\ne1,m1,USD,capture_settled,1.00,{text}\n")
    assert [r["event_time"] for r in rows(path, EVENT_FILE_SCHEMA, optional=frozenset())] == [instant]


def test_a_time_in_a_named_zone_is_refused_as_the_file_holds_it(tmp_path):
    path = tmp_path / "events.csv"
    path.write_text(f"{EVENT_CSV.splitlines()[0]}\ne1,m1,USD,capture_settled,1.00,2026-10-01 09:15:00.1234567 CET\n")
    with pytest.raises(LoadError, match=re.escape("'2026-10-01 09:15:00.1234567 CET' is not an ISO 8601 date-time")):
        rows(path, EVENT_FILE_SCHEMA, optional=frozenset())


def test_parquet_from_pandas_or_pyarrow_reads_with_the_contract_types(tmp_path):
    """A file written from pandas or pyarrow keeps its Arrow types: categorical (dictionary-encoded)
    text, ``decimal(12,2)`` amounts and millisecond times in a named zone read as the contract's
    string, decimal and UTC microsecond types."""
    new_york = ZoneInfo("America/New_York")
    table = pa.table(
        {
            "event_id": ["e1", "e2"],
            "merchant_id": pa.array(["m1", "m1"]).dictionary_encode(),
            "currency": pa.array(["USD", "EUR"]).dictionary_encode(),
            "event_type": ["capture_settled", "payout_paid"],
            "amount": pa.array([Decimal("10.00"), Decimal("3.10")], pa.decimal128(12, 2)),
            "event_time": pa.array(
                [dt.datetime(2026, 10, 5, 8, tzinfo=new_york), dt.datetime(2026, 11, 5, 9, 30, 0, 123000, tzinfo=new_york)],
                pa.timestamp("ms", tz="America/New_York"),
            ),
        }
    )
    path = tmp_path / "events.parquet"
    pq.write_table(table, path)
    got = rows(path, EVENT_FILE_SCHEMA, optional=frozenset())
    assert [(r["merchant_id"], r["currency"], r["amount"]) for r in got] == [("m1", "USD", Decimal("10.00")), ("m1", "EUR", Decimal("3.10"))]
    # Daylight saving time ended on 2026-11-01: UTC-4, then UTC-5.
    assert [r["event_time"] for r in got] == [dt.datetime(2026, 10, 5, 12, tzinfo=dt.UTC), dt.datetime(2026, 11, 5, 14, 30, 0, 123000, tzinfo=dt.UTC)]
