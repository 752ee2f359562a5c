"""Load Parquet, CSV or JSON Lines files into the landing tables of schema ``payledger_raw``.

Events are appended with ``ingest_seq`` (next source position, in file order) and ``ingested_at``;
policies and merchants are upserts of current state keyed by ``segment`` / ``merchant_id``. A file is
checked and converted completely before anything is written, and written in one commit, so a bad
file loads nothing. Each loaded file is then recorded in ``payledger_raw.load_log``.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import tempfile
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from payledger.contract import LANDED_AMOUNT_DDL, LANDED_AMOUNT_TYPE, LANDING_TABLES, LOAD_LOG, LOAD_LOG_COLUMNS, RAW_SCHEMA
from payledger.formats import session_format
from payledger.locks import load_lock

ROW_COLUMN = "_file_row"
#: JSON Lines files: one JSON object per line, optionally gzip-compressed (``.jsonl.gz``).
JSON_LINES_SUFFIXES = (".jsonl", ".ndjson")
#: Rows per batch read from a JSON Lines file.
JSON_BATCH_ROWS = 100_000
#: Columns given as a fraction or a percentage.
FRACTION_COLUMNS = frozenset({"reserve_pct"})
#: The accepted forms of a date column, as messages name them.
DATE_FORMS = "a date (2026-01-01), or a date-time at midnight UTC (2026-01-01T00:00:00Z, +00:00 or no offset)"
#: The accepted forms of a fraction column, as messages name them.
FRACTION_FORMS = "a fraction (0.1) or a percentage (10%)"


class LoadError(Exception):
    """A file that cannot be loaded: wrong schema, unreadable or invalid content. Nothing was written."""


def _open(path: Path, expected: pa.Schema) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """Open a file: its column schema (read from the header or footer) and an iterator of batches.

    CSV columns are all read as strings (parsed later, column by column); Parquet keeps its types.
    """
    if not path.is_file():
        raise LoadError(f"{path}: no such file")
    suffix = path.suffix.lower()
    if _is_json_lines(path):
        return _open_json_lines(path)
    if suffix not in (".parquet", ".csv"):
        raise LoadError(f"{path}: expected a .parquet, .csv, .jsonl or .ndjson file (JSON Lines may be gzip-compressed: .jsonl.gz)")
    try:
        if suffix == ".parquet":
            parquet = pq.ParquetFile(path)
            return parquet.schema_arrow, parquet.iter_batches(batch_size=1_000_000)
        convert = pacsv.ConvertOptions(
            column_types={field.name: pa.string() for field in expected},
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
        )
        reader = pacsv.open_csv(path, convert_options=convert)
        return reader.schema, iter(reader)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError) as error:
        raise LoadError(f"{path}: cannot read the file as {suffix[1:]}: {error}") from None


def _is_json_lines(path: Path) -> bool:
    suffixes = [suffix.lower() for suffix in path.suffixes[-2:]]
    return bool(suffixes) and (suffixes[-1] in JSON_LINES_SUFFIXES or (suffixes[-1] == ".gz" and suffixes[0] in JSON_LINES_SUFFIXES))


def _json_rows(path: Path) -> Iterator[dict]:
    """The objects of a JSON Lines file, in file order (blank lines skipped). Numbers keep their
    exact text (``12.50`` stays ``"12.50"``: money is never a float); every value is a string or
    null. A UTF-8 byte order mark at the start is skipped (.NET's and PowerShell 5's UTF-8 writers
    add one; RFC 8259 lets a parser ignore it), as the CSV reader skips it. Raises ``LoadError``
    naming the line for anything else."""

    def refuse(constant: str):
        raise ValueError(f"{constant} is not a number")

    opener = gzip.open if path.suffix.lower() == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8-sig") as lines:
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line, parse_float=str, parse_int=str, parse_constant=refuse)
                except ValueError as error:
                    raise LoadError(f"{path}: line {number} is not JSON: {error}") from None
                if not isinstance(row, dict):
                    raise LoadError(f"{path}: line {number} is a JSON {type(row).__name__}, not an object of columns")
                for name, value in row.items():
                    if value is not None and not isinstance(value, str):
                        raise LoadError(f"{path}: line {number}, column {name}: a JSON {type(value).__name__}; expected a string, a number or null")
                yield row
    except (OSError, EOFError, UnicodeDecodeError) as error:
        raise LoadError(f"{path}: cannot read the file as JSON Lines: {error}") from None


def _open_json_lines(path: Path) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """A JSON Lines file as string columns, like a CSV file's: the columns any row names (a first
    pass), then batches of rows (a row without a column has null there)."""
    names: dict[str, None] = {}
    for row in _json_rows(path):
        names.update(dict.fromkeys(row))
    schema = pa.schema([(name, pa.string()) for name in names])

    def batch(rows: list[dict]) -> pa.RecordBatch:
        return pa.record_batch([pa.array([row.get(name) for row in rows], pa.string()) for name in names], schema=schema)

    def batches() -> Iterator[pa.RecordBatch]:
        rows: list[dict] = []
        for row in _json_rows(path):
            rows.append(row)
            if len(rows) == JSON_BATCH_ROWS:
                yield batch(rows)
                rows = []
        if rows:
            yield batch(rows)

    return schema, batches()


def _read_batches(path: Path, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    try:
        yield from batches
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError) as error:
        raise LoadError(f"{path}: cannot read the file: {error}") from None


def _convert_column(path: Path, column: pa.Array, field: pa.Field, first_row: int) -> pa.Array:
    """Cast one column to its contract type; strings from CSV are parsed, floats never become money,
    times finer than a microsecond (Parquet ``timestamp[ns]``) are truncated to the microsecond."""
    if pa.types.is_floating(column.type) and pa.types.is_decimal(field.type):
        raise LoadError(f"{path}: column {field.name} is {column.type}; money must be a decimal or a string, never a float")
    try:
        if pa.types.is_string(column.type) and not pa.types.is_string(field.type):
            column = pc.utf8_trim_whitespace(column)
            column = pc.if_else(pc.equal(column, ""), pa.scalar(None, pa.string()), column)
            if pa.types.is_timestamp(field.type):
                return _parse_timestamps(column, field)
            if pa.types.is_date(field.type):
                return _parse_dates(path, column, field, first_row)
            if field.name in FRACTION_COLUMNS:
                return _parse_fractions(path, column, field, first_row)
        if pa.types.is_timestamp(column.type) and pa.types.is_date(field.type):
            return _midnight_dates(path, column, field, first_row)
        if pa.types.is_timestamp(column.type) and pa.types.is_timestamp(field.type):
            if column.type.tz is None:
                column = pc.assume_timezone(column, "UTC")
            if column.type.unit == "ns":  # pandas' unit; Spark keeps microseconds: drop finer digits
                column = pc.floor_temporal(column, unit="microsecond")
        return column.cast(field.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as error:
        raise LoadError(f"{path}: column {field.name} (rows from {first_row + 1}) cannot be read as {field.type}: {error}") from None


def _parse_timestamps(column: pa.Array, field: pa.Field) -> pa.Array:
    """ISO 8601 strings -> UTC instants of ``field``'s type (the contract's ``timestamp[us, UTC]``): ``2026-10-01 12:00:00`` or with a ``T`` separator, an
    optional fraction, and a zone offset (``Z``, ``+01:00``, ``-0530``, ``+01``) that is converted
    to UTC; a time without an offset is UTC (the contract's zone), a date alone its midnight UTC.
    Two forms of exports are read too: `` UTC`` after the time (BigQuery's CSV of a TIMESTAMP) as
    ``Z``, and a fraction finer than the microsecond (pandas' nanoseconds) truncated to it, as
    ``_convert_column`` truncates Parquet's ``timestamp[ns]``. Raises ``pa.ArrowInvalid`` for
    anything else."""
    given = column
    column = pc.replace_substring_regex(column, r"(\d) ?UTC$", r"\1Z")
    column = pc.replace_substring_regex(column, r"(\.\d{6})\d+", r"\1")
    date_only = pc.match_substring_regex(column, r"^\d{4}-\d{2}-\d{2}$")
    has_offset = pc.match_substring_regex(column, r"(Z|[+-]\d{2}(:?\d{2})?)$")
    suffix = pc.if_else(date_only, "T00:00:00Z", pc.if_else(has_offset, "", "Z"))
    text = pc.binary_join_element_wise(column, suffix, "")
    try:
        return pc.cast(text, field.type)
    except pa.ArrowInvalid:
        # Name the first value as the file holds it (Arrow's message shows the suffixed text).
        for original, value in zip(given.to_pylist(), text.to_pylist(), strict=True):
            try:
                pc.cast(pa.array([value]), field.type)
            except pa.ArrowInvalid:
                raise pa.ArrowInvalid(f"{original!r} is not an ISO 8601 date-time (such as 2026-10-01 12:00:00 or 2026-10-01T12:00:00+01:00)") from None
        raise


def _row_error(path: Path, field: pa.Field, column: pa.Array, bad: pa.Array, first_row: int, why: str) -> LoadError:
    """The error for the first row where ``bad`` holds, naming its row (from 1) and value."""
    index = pc.index(bad, True).as_py()
    value = column[index].as_py()
    shown = value.isoformat() if isinstance(value, dt.datetime) else value
    return LoadError(f"{path}: column {field.name}, row {first_row + index + 1}: {shown!r} {why}")


def _parse_dates(path: Path, column: pa.Array, field: pa.Field, first_row: int) -> pa.Array:
    """Date strings -> ``field``'s date type: ``2026-01-01``, or a date-time at midnight UTC
    (``T`` or a space; ``Z``, a zero offset or none), which is that date. Raises ``LoadError``
    naming the row for any other time or offset."""
    accepted = pc.match_substring_regex(column, r"^\d{4}-\d{2}-\d{2}([T ]00:00(:00(\.0+)?)?(Z|[+-]00(:?00)?)?)?$")
    bad = pc.and_(pc.is_valid(column), pc.invert(accepted))
    if pc.any(bad).as_py():
        raise _row_error(path, field, column, bad, first_row, f"is not a date: give {DATE_FORMS}")
    return pc.utf8_slice_codeunits(column, 0, 10).cast(field.type)


def _midnight_dates(path: Path, column: pa.Array, field: pa.Field, first_row: int) -> pa.Array:
    """Timestamps (Parquet) -> dates: an instant at midnight UTC is that date (a timestamp without
    a zone is UTC); any other raises ``LoadError`` naming the row."""
    utc = column.cast(pa.timestamp(column.type.unit, "UTC"))
    bad = pc.fill_null(pc.not_equal(pc.floor_temporal(utc, unit="day"), utc), False)
    if pc.any(bad).as_py():
        raise _row_error(path, field, utc, bad, first_row, f"is not a date: give {DATE_FORMS}")
    return utc.cast(field.type)


def _parse_fractions(path: Path, column: pa.Array, field: pa.Field, first_row: int) -> pa.Array:
    """Fraction strings -> ``field``'s decimal: ``0.1`` or ``10%`` (also ``12.5%``). A bare number
    above 1 is ambiguous (10 may mean 10% or 1000%) and a percentage above 100% out of range: both
    raise ``LoadError`` naming the row; a value with more digits than the type keeps raises
    ``pa.ArrowInvalid`` (the caller names the column)."""
    percent = pc.fill_null(pc.ends_with(column, "%"), False)
    number = pc.utf8_rtrim_whitespace(pc.replace_substring_regex(column, "%$", "")).cast(pa.decimal128(field.type.precision + 8, field.type.scale + 2))
    over_one = pc.fill_null(pc.greater(number, pa.scalar(Decimal(1), number.type)), False)
    if pc.any(pc.and_(over_one, pc.invert(percent))).as_py():
        raise _row_error(path, field, column, pc.and_(over_one, pc.invert(percent)), first_row, f"is ambiguous: give {FRACTION_FORMS}")
    scaled = pc.multiply(number, pa.scalar(Decimal("0.01"), pa.decimal128(3, 2)))
    fraction = pc.if_else(percent, scaled, number.cast(scaled.type))
    over_all = pc.fill_null(pc.greater(fraction, pa.scalar(Decimal(1), fraction.type)), False)
    if pc.any(over_all).as_py():
        raise _row_error(path, field, column, over_all, first_row, "is above 100%")
    return fraction.cast(field.type)


def _converted(path: Path, expected: pa.Schema, optional: set[str]) -> Iterator[pa.RecordBatch]:
    """Yield batches in the contract schema plus ``_file_row``; raise LoadError on the first problem."""
    schema, batches = _open(path, expected)
    names = set(schema.names)
    missing = [f.name for f in expected if f.name not in names and f.name not in optional]
    unexpected = sorted(names - set(expected.names))
    if missing or unexpected:
        raise LoadError(
            f"{path}: wrong columns: missing {missing or 'none'}, unexpected {unexpected or 'none'}; "
            f"expected {expected.names} ({', '.join(sorted(optional)) or 'none'} optional)"
        )
    row = 0
    for batch in _read_batches(path, batches):
        arrays = [_convert_column(path, batch.column(f.name), f, row) if f.name in names else pa.nulls(batch.num_rows, f.type) for f in expected]
        arrays.append(pa.array(range(row, row + batch.num_rows), pa.int64()))
        yield pa.record_batch(arrays, schema=expected.append(pa.field(ROW_COLUMN, pa.int64())))
        row += batch.num_rows


def ensure_landing_tables(spark) -> None:
    """Create schema ``payledger_raw``, its three landing tables and ``load_log`` when they do not exist.

    The tables are in the session's table format (``formats.session_format``: Delta Lake on target
    ``delta``, Iceberg on ``iceberg``), like every table dbt writes there.

    A ``payment_events`` table whose amounts have a smaller scale than ``LANDED_AMOUNT_TYPE``
    (warehouses created before it hold decimal(18,2)) is rewritten first, see ``_widen_amounts``.
    """
    using = session_format(spark)
    # One listing of the schema from the metastore instead of a `create table if not exists` per
    # table: each of those resolves its table through the format's catalog (Delta reads the table's
    # log), 0.17-0.27 s in all per load against 0.05-0.07 s for the listing (Delta, warm JVM).
    existing = set()
    if spark.catalog.databaseExists(RAW_SCHEMA):
        existing = {row["tableName"] for row in spark.sql(f"show tables in {RAW_SCHEMA}").collect() if not row["isTemporary"]}
    else:
        spark.sql(f"create database if not exists {RAW_SCHEMA}")
    wanted = {table: columns for table, (columns, _, _) in LANDING_TABLES.items()} | {LOAD_LOG: LOAD_LOG_COLUMNS}
    for table, columns in wanted.items():
        if table not in existing:
            spark.sql(f"create table if not exists {RAW_SCHEMA}.{table} ({columns}) using {using}")
    _widen_amounts(spark, f"{RAW_SCHEMA}.payment_events", using)


def _widen_amounts(spark, table: str, using: str) -> bool:
    """Rewrite ``table`` with its ``amount`` column cast to ``LANDED_AMOUNT_TYPE`` when the stored
    scale is smaller (decimal(18,2) -> decimal(38,18): every stored value converts exactly; one
    that would not fit raises ``LoadError`` before anything is written). One atomic
    ``create or replace ... as select`` over the table itself, in the same format: the rows, their
    order of ``ingest_seq`` and every other column are kept, and the table's earlier versions stay
    in its history. Returns whether it rewrote. Callers hold the load lock."""
    stored = spark.table(table)
    amount = stored.schema["amount"].dataType
    if amount.scale >= LANDED_AMOUNT_TYPE.scale:
        return False
    integer_digits = LANDED_AMOUNT_TYPE.precision - LANDED_AMOUNT_TYPE.scale
    # Only a stored type with more integer digits can hold a value that does not fit (the cast
    # would make it null): scan for one only then (decimal(18,2) has 16, against 20).
    if amount.precision - amount.scale > integer_digits:
        limit = 10**integer_digits
        too_large = spark.sql(f"select count(*) as n from {table} where abs(amount) >= {limit}").first()["n"]
        if too_large:
            raise LoadError(f"{table}: {too_large} stored amount(s) of {limit:,} major units or more do not fit {LANDED_AMOUNT_DDL}")
    columns = ", ".join(f"cast(amount as {LANDED_AMOUNT_DDL}) as amount" if name == "amount" else f"`{name}`" for name in stored.columns)
    spark.sql(f"create or replace table {table} using {using} as select {columns} from {table}")
    return True


def _check_reference_rows(path: Path, staged: pa.Table, kind: str, key: str) -> None:
    required = {"reserve_policies": ["segment", "reserve_pct", "effective_from"], "merchants": ["merchant_id", "segment", "segment_effective_from"]}[kind]
    for name in required:
        nulls = staged[name].null_count
        if nulls:
            raise LoadError(f"{path}: column {name} is empty in {nulls} row(s); every {kind} row needs it")
    counts = pc.value_counts(staged[key])
    repeated = [item["values"].as_py() for item in counts if item["counts"].as_py() > 1]
    if repeated:
        raise LoadError(f"{path}: {key} must be unique in a current-state file; repeated: {repeated[:5]}")
    if kind == "reserve_policies":
        pct = staged["reserve_pct"]
        if pc.sum(pc.greater(pct, 1)).as_py():
            raise LoadError(f"{path}: reserve_pct above 1 is ambiguous (10 may mean 10% or 1000%); give {FRACTION_FORMS}")
        bad = pc.sum(pc.less(pct, 0)).as_py()
        if bad:
            raise LoadError(f"{path}: reserve_pct must be within [0, 1] ({FRACTION_FORMS}); {bad} row(s) are below 0")


def load_file(spark, kind: str, path: Path, warehouse: Path) -> int:
    """Load ``path`` into ``payledger_raw.<kind>`` (kind: payment_events, reserve_policies, merchants).

    Returns the number of rows written (for policies and merchants: inserted or changed; unchanged
    rows are not rewritten). Raises ``LoadError`` (nothing written) for a missing or unreadable
    file, wrong columns, values that do not fit the contract types (a date-time that is not midnight
    UTC in a date column, a bare ``reserve_pct`` above 1 or a percentage above 100%), and for
    policies and merchants: empty required values, repeated keys, ``reserve_pct`` outside [0, 1], or a changed row whose
    ``updated_at`` is not later than its key's latest loaded ``updated_at`` (see
    ``_upsert_current_state``).
    """
    if kind not in LANDING_TABLES:
        raise LoadError(f"unknown landing table {kind!r}; expected one of {sorted(LANDING_TABLES)}")
    _, schema, key = LANDING_TABLES[kind]
    optional = {"updated_at"} if key else set()
    with tempfile.TemporaryDirectory(prefix="payledger-load-") as tmp, load_lock(warehouse):
        staged_path = Path(tmp) / "staged.parquet"
        rows = 0
        with pq.ParquetWriter(staged_path, schema.append(pa.field(ROW_COLUMN, pa.int64()))) as writer:
            for batch in _converted(path, schema, optional):
                writer.write_batch(batch)
                rows += batch.num_rows
        if rows == 0:
            raise LoadError(f"{path}: the file holds no rows")
        ensure_landing_tables(spark)
        target = f"{RAW_SCHEMA}.{kind}"
        staged_uri = staged_path.resolve().as_uri()
        if key is None:
            written = _append_events(spark, target, staged_uri, rows)
        else:
            _check_reference_rows(path, pq.read_table(staged_path), kind, key)
            written = _upsert_current_state(spark, path, target, staged_uri, key, schema)
        _log_load(spark, kind, path, rows, written)
        return written


def _log_load(spark, kind: str, path: Path, rows: int, written: int) -> None:
    """Append the delivery to ``payledger_raw.load_log`` (after the data's own commit): one
    ``insert ... values`` with the values as parameters (a file name may hold any character)."""
    spark.sql(
        f"insert into {RAW_SCHEMA}.{LOAD_LOG} values (:table_name, :file_name, :rows_in_file, :rows_written, current_timestamp())",
        args={"table_name": kind, "file_name": path.name, "rows_in_file": rows, "rows_written": written},
    )


def _append_events(spark, target: str, staged_uri: str, rows: int) -> int:
    base = spark.sql(f"select coalesce(max(ingest_seq), 0) as seq from {target}").first()["seq"]
    spark.sql(
        f"""
        insert into {target}
        select event_id, merchant_id, currency, event_type, amount, event_time,
            current_timestamp() as ingested_at,
            {int(base)} + {ROW_COLUMN} + 1 as ingest_seq
        from parquet.`{staged_uri}`
        """
    )
    return rows


def _upsert_current_state(spark, path: Path, target: str, staged_uri: str, key: str, schema: pa.Schema) -> int:
    """Merge a current-state file into ``target``: new keys are inserted, changed rows updated.

    A row whose values equal the stored row's is not rewritten, whatever its ``updated_at`` (a full
    export keeps unchanged rows' own timestamps; a new ``updated_at`` alone changes nothing). A row
    without ``updated_at`` gets the load time. Per key, observations move forward: a changed row
    whose ``updated_at`` is not later than that key's stored ``updated_at`` raises ``LoadError``
    before anything is written. Each table is checked on its own: equal or interleaved timestamps
    across ``reserve_policies`` and ``merchants`` are fine.
    """
    loaded_at = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    value_columns = [f.name for f in schema if f.name != "updated_at"]
    select = ", ".join([*value_columns, f"coalesce(updated_at, timestamp '{loaded_at}') as updated_at"])
    changed = " or ".join(f"not (dest.{name} <=> src.{name})" for name in value_columns if name != key)
    source = f"(select {select} from parquet.`{staged_uri}`)"
    # One scan of the file against the table answers both questions: the rows to write (new or
    # changed) and the changed rows that go back in time, sorted by key.
    checked = spark.sql(
        f"""
        select
            count_if(dest.{key} is null or ({changed})) as written,
            array_sort(collect_list(
                case when dest.{key} is not null and ({changed}) and not coalesce(src.updated_at > dest.updated_at, true)
                    then named_struct('key', src.{key}, 'given', cast(src.updated_at as string), 'latest', cast(dest.updated_at as string))
                end
            )) as backwards
        from {source} as src
        left join {target} as dest on dest.{key} = src.{key}
        """
    ).first()
    written, backwards = checked["written"], checked["backwards"]
    if backwards:
        first = backwards[0]
        raise LoadError(
            f"{path}: {key} {first['key']!r} changed with updated_at {first['given']} UTC, not later than its latest loaded "
            f"updated_at {first['latest']} UTC ({len(backwards)} changed row(s) go back in time, e.g. "
            f"{', '.join(repr(r['key']) for r in backwards[:5])}); per key, updated_at must move forward. Nothing was loaded."
        )
    if written:
        spark.sql(
            f"""
            merge into {target} as dest
            using {source} as src
            on dest.{key} = src.{key}
            when matched and ({changed}) then update set *
            when not matched then insert *
            """
        )
    return int(written)
