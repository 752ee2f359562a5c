"""The ``payledger`` command: ``generate``, ``load``, ``sql``, ``balance``, ``explain``, ``build``, ``serve``,
``api-key``, ``publish``, ``reconcile``, ``maintain``, ``thrift``, ``demo``, ``bench``, ``bench-aging`` and ``bench-serve`` over the project's
warehouse.

One error style: a failing command prints ``Error: <message>`` on stderr and exits 1 (a
``click.ClickException``; ``Group`` turns the errors commands meet in use, a file that does not load,
a Spark error, a failed build, into one); a usage error prints the usage and exits 2; ``maintain``,
``publish`` and ``reconcile`` exit 75 when another build holds the warehouse's lock. ``build`` and
``reconcile`` are the exceptions, for cron: they report failures as JSON on stdout (``build`` one
line per step) and exit 0, 1 or 75. Spark's own log messages stay off unless ``--verbose`` or
``PAYLEDGER_SPARK_LOG_LEVEL`` asks for them (``profiles/log4j2.properties``).
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import os
import sys
from decimal import Decimal
from pathlib import Path

import click

from payledger.apikeys import KEY_FILE_VARIABLE
from payledger.locks import EXIT_LOCKED

LOAD_KINDS = {"events": "payment_events", "policies": "reserve_policies", "merchants": "merchants"}
#: The log4j level of Spark's driver logging (profiles/log4j2.properties; default error).
LOG_LEVEL_VARIABLE = "PAYLEDGER_SPARK_LOG_LEVEL"
#: Levels at least as detailed as --verbose's, which it leaves as they are.
DETAILED_LEVELS = ("info", "debug", "trace", "all")


class WarehouseLocked(click.ClickException):
    """Another build holds the warehouse's build lock: exit 75 (``EX_TEMPFAIL``), nothing was run."""

    exit_code = EXIT_LOCKED


def _expected_errors() -> tuple[type[BaseException], ...]:
    """Errors a command meets in normal use: they become ``Error: <message>`` (exit 1)."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    from payledger.demo import DemoFailed
    from payledger.formats import FormatError
    from payledger.history import HistoryError
    from payledger.load import LoadError
    from payledger.scenario import BuildFailed
    from payledger.spark import WarehouseMoved
    from payledger.thrift import ThriftError

    return (OSError, LoadError, HistoryError, FormatError, BuildFailed, DemoFailed, ThriftError, WarehouseMoved, PySparkException, Py4JJavaError)


def _message(error: BaseException) -> str:
    """The error's message; for a Java exception its class and message, without the stack trace."""
    java = getattr(error, "java_exception", None)
    if java is not None:
        return str(java.toString())
    if isinstance(error, FileNotFoundError):
        return f"no such file: {error.filename or error}"
    if isinstance(error, OSError) and error.strerror:
        return f"{error.filename}: {error.strerror}" if error.filename else error.strerror
    return str(error)


class Group(click.Group):
    """The ``payledger`` group: commands' expected errors become ``click.ClickException`` (exit 1)."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as error:
            if isinstance(error, _expected_errors()):
                raise click.ClickException(_message(error)) from None
            raise


@click.group(cls=Group)
@click.version_option(package_name="payledger", prog_name="payledger")
@click.option(
    "--verbose",
    is_flag=True,
    help=f"Show Spark's and Hive's log messages (info and above) on stderr; ${LOG_LEVEL_VARIABLE}=debug shows more.",
)
def main(verbose: bool) -> None:
    """PayLedger helpers for the dbt project (run from anywhere; the warehouse is the project's)."""
    if verbose and os.environ.get(LOG_LEVEL_VARIABLE, "").lower() not in DETAILED_LEVELS:
        os.environ[LOG_LEVEL_VARIABLE] = "info"


@main.command("generate")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), required=True, help="Folder for the Parquet files.")
@click.option(
    "--events",
    type=click.IntRange(min=1),
    default=100_000,
    show_default=True,
    help="Clean events (before duplicates and bad rows); follow-ups past the end date are dropped.",
)
@click.option("--merchants", type=click.IntRange(min=1), default=1_000, show_default=True)
@click.option("--segments", type=click.IntRange(1, 12), default=10, show_default=True)
@click.option("--days", type=click.IntRange(min=1), default=365, show_default=True, help="Days of event time, ending on --end-date.")
@click.option("--end-date", type=click.DateTime(["%Y-%m-%d"]), default="2026-11-01", show_default=True)
@click.option("--seed", type=int, default=42, show_default=True)
@click.option("--duplicate-rate", type=float, default=0.01, show_default=True)
@click.option("--late-rate", type=float, default=0.01, show_default=True)
@click.option("--bad-rate", type=float, default=0.002, show_default=True)
@click.option(
    "--continue-from",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Write a follow-on batch: new events plus re-sent copies of this history's events.",
)
@click.option("--id-prefix", default=None, help="Prefix of new event ids (default evt_, or b<seed>_ for a batch).")
def generate_command(out_dir: Path, end_date: dt.datetime, continue_from: Path | None, id_prefix: str | None, **kwargs) -> None:
    """Write a seeded synthetic history (events, merchants, policies) as Parquet."""
    from rich.progress import Progress

    from payledger.generate import EVENT_FILE, GenerateOptions, generate, generate_batch

    options = GenerateOptions(end_date=end_date.date(), **kwargs)
    try:
        if continue_from is not None:
            counts = generate_batch(options, continue_from / EVENT_FILE, out_dir, id_prefix=id_prefix or f"b{options.seed}_")
        else:
            with Progress(transient=True) as progress:
                task = progress.add_task("events", total=int(options.events * (1 + options.duplicate_rate)))
                counts = generate(options, out_dir, id_prefix=id_prefix or "evt_", progress=lambda n: progress.advance(task, n))
    except ValueError as error:
        raise click.UsageError(str(error)) from None
    click.echo(json.dumps({"out": str(out_dir), **counts}))


@main.command("load")
@click.argument("kind", type=click.Choice(sorted(LOAD_KINDS)))
@click.argument("file", type=click.Path(path_type=Path))
def load_command(kind: str, file: Path) -> None:
    """Load a Parquet, CSV or JSON Lines FILE into a landing table (events append; policies, merchants upsert)."""
    from payledger.contract import RAW_SCHEMA
    from payledger.load import load_file
    from payledger.spark import default_warehouse, get_spark

    rows = load_file(get_spark(), LOAD_KINDS[kind], file, default_warehouse())
    click.echo(json.dumps({"table": f"{RAW_SCHEMA}.{LOAD_KINDS[kind]}", "rows": rows}))


def _plain(value: object) -> object:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    return value


@main.command("sql")
@click.argument("query")
@click.option("--format", "fmt", type=click.Choice(["csv", "json"]), default="csv", show_default=True)
def sql_command(query: str, fmt: str) -> None:
    """Run QUERY on the project's warehouse; print CSV (header then rows) or a JSON array of objects."""
    from payledger.spark import get_spark

    frame = get_spark().sql(query)
    rows = frame.collect()
    if fmt == "json":
        click.echo(json.dumps([{k: _plain(v) for k, v in row.asDict().items()} for row in rows], indent=None))
        return
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(frame.columns)
    for row in rows:
        writer.writerow([_plain(v) for v in row])


def _as_of(_ctx, _param, value: str | None) -> dt.datetime | None:
    """--as-of: an ISO timestamp; without an offset it is UTC."""
    if value is None:
        return None
    try:
        moment = dt.datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"expected an ISO timestamp such as 2026-11-23T18:00:00Z (UTC unless an offset is given), got {value!r}") from None
    return moment.replace(tzinfo=dt.UTC) if moment.tzinfo is None else moment.astimezone(dt.UTC)


AS_OF_OPTION = click.option(
    "--as-of", "as_of", callback=_as_of, metavar="TIMESTAMP", help="The version published at this moment (ISO, UTC unless an offset is given)."
)
BUILD_OPTION = click.option("--build", "build", metavar="INVOCATION_ID", help="The version this build (a dbt invocation id) published.")
HISTORY_FORMAT_OPTION = click.option("--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table", show_default=True)


def _history_call(function, *args, **kwargs):
    """Run a payledger.history query; a malformed value is a usage error (exit 2). A moment, build
    or key without a balance (``HistoryError``) is an error the group reports (exit 1)."""
    try:
        return function(*args, **kwargs)
    except ValueError as error:
        raise click.UsageError(str(error)) from None


def _history_read(engine: str, published, on_spark, *args, **kwargs):
    """``_history_call`` of ``published(warehouse, table format, ...)`` (no JVM) or, with engine
    spark, of ``on_spark(spark, ...)``."""
    if engine == "published":
        from payledger.formats import target_format
        from payledger.spark import default_warehouse

        return _history_call(published, default_warehouse(), target_format(), *args, **kwargs)
    from payledger.spark import get_spark

    return _history_call(on_spark, get_spark(), *args, **kwargs)


def _published(build) -> dict | None:
    if build is None:
        return None
    return {
        "invocation_id": build.invocation_id,
        "view_version": build.view_version,
        "committed_at": _plain(build.committed_at),
        "events_watermark": build.events_watermark,
        "policy_observed_at": _plain(build.policy_observed_at),
    }


#: Decimal columns of history's rows that are rates, not money (shown as stored).
RATE_COLUMNS = frozenset({"reserve_pct"})


class _Amount(str):
    """A money amount as text with its currency's minor unit of decimals (right-aligned in tables)."""


def _amounts_shown(value: object, currency: str | None = None) -> object:
    """``value`` (rows, documents: dicts and lists) with every money ``Decimal`` (any Decimal not in
    ``RATE_COLUMNS``) as ``currencies.format_amount`` text: ``100`` JPY, ``1.235`` KWD, ``12.50``
    USD. A dict's ``currency`` applies to its values and everything inside it; else ``currency``."""
    from payledger.currencies import format_amount

    if isinstance(value, dict):
        currency = value.get("currency", currency)
        return {
            key: _Amount(format_amount(item, currency)) if isinstance(item, Decimal) and key not in RATE_COLUMNS else _amounts_shown(item, currency)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_amounts_shown(item, currency) for item in value]
    return value


def _emit(fmt: str, title: str, sections: list[tuple[str, list[dict]]], document: dict, currency: str | None = None) -> None:
    """Print ``document`` as JSON, the first section as CSV, or every section as a rich table.
    Amounts show their currency's minor unit (``_amounts_shown``; ``currency`` for rows without one)."""
    document = _amounts_shown(document, currency)
    sections = [(name, _amounts_shown(rows, currency)) for name, rows in sections]
    if fmt == "json":
        click.echo(json.dumps(document, default=_plain))
        return
    if fmt == "csv":
        rows = sections[0][1]
        writer = csv.writer(sys.stdout, lineterminator="\n")
        columns = list(dict.fromkeys(column for row in rows for column in row))
        writer.writerow(columns)
        for row in rows:
            writer.writerow([_plain(row.get(column)) for column in columns])
        return
    from rich.console import Console
    from rich.table import Table

    console = Console(width=None if sys.stdout.isatty() else 200)
    console.print(title)
    for name, rows in sections:
        if not rows:
            console.print(f"{name}: none")
            continue
        table = Table(title=name, title_justify="left")
        for column in rows[0]:
            table.add_column(column, justify="right" if isinstance(rows[0][column], (int, float, Decimal, _Amount)) else "left", overflow="fold")
        for row in rows:
            table.add_row(*(_cell(v) for v in row.values()))
        console.print(table)


def _cell(value: object) -> str:
    """A table cell: times to the second (JSON and CSV keep microseconds), None as blank."""
    if value is None:
        return ""
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ", timespec="seconds")
    return str(_plain(value))


def _moment(build) -> str:
    return "the current version of the view" if build is None else f"the view as published by {build.describe()}"


#: Where ``balance`` and ``explain`` read: the published versions' files, or Spark.
ENGINE_OPTION = click.option(
    "--engine",
    type=click.Choice(["published", "spark"]),
    default="published",
    show_default=True,
    help="published: the publication's files, no JVM; spark: time travel on Spark, every build the audit recorded.",
)


@main.command("balance")
@click.argument("merchant_id")
@click.option("--currency", help="Only this currency (ISO 4217).")
@AS_OF_OPTION
@BUILD_OPTION
@HISTORY_FORMAT_OPTION
@ENGINE_OPTION
def balance_command(merchant_id: str, currency: str | None, as_of: dt.datetime | None, build: str | None, fmt: str, engine: str) -> None:
    """MERCHANT_ID's balances as the view published them: now, at --as-of or by --build.

    Rows of merchant_balance_current, with written_by_invocation_id, source_watermark and
    policy_observed_at. By default read without a JVM from the published versions (only builds
    whose tests passed; the current one and the nine before it), which runs beside a build. With
    --engine spark: time travel to the version any build recorded in balance_invalidations, back
    to the retention of table maintenance (PAYLEDGER_RETENTION_HOURS, 168 by default).
    """
    if as_of is not None and build is not None:
        raise click.UsageError("give --as-of or --build, not both")
    from payledger import history

    result = _history_read(engine, history.published_balance, history.balance, merchant_id, currency, as_of=as_of, build=build)
    _emit(fmt, _moment(result.build), [("balances", result.rows)], {"build": _published(result.build), "rows": result.rows})


@main.command("explain")
@click.argument("merchant_id")
@click.argument("currency")
@AS_OF_OPTION
@BUILD_OPTION
@click.option("--by", type=click.Choice(["event", "day"]), default="event", show_default=True, help="One line per posting, or per day.")
@HISTORY_FORMAT_OPTION
@ENGINE_OPTION
def explain_command(merchant_id: str, currency: str, as_of: dt.datetime | None, build: str | None, by: str, fmt: str, engine: str) -> None:
    """The postings that make up MERCHANT_ID's CURRENCY balance, as of a build (the latest by default).

    Each accepted event with its available, pending and reserve deltas, the segment and reserve_pct
    applied and the snapshot versions they came from, then the totals against the view's row, then
    the merchant's rejected rows with their reasons. Exit 1 when the totals differ from the view.
    By default without a JVM, for the published builds (as balance reads them): the tables' files,
    posted in Python by the models' rules (payledger.postings). With --engine spark: the models'
    own macro (post_payment_events) on Spark, for any build the audit recorded.
    """
    if as_of is not None and build is not None:
        raise click.UsageError("give --as-of or --build, not both")
    from payledger import history
    from payledger.currencies import format_amount

    result = _history_read(engine, history.published_explain, history.explain, merchant_id, currency, as_of=as_of, build=build, by=by)
    differences = result.differences()
    totals = {"line": "postings total", **result.totals}
    view = {"line": "view row", **{column: result.view_row[column] for column in result.totals}}
    verdict = (
        "the totals equal the view's row"
        if not differences
        else "the totals DIFFER from the view's row: "
        + ", ".join(f"{column} {format_amount(total, currency)} vs {format_amount(value, currency)}" for column, (total, value) in differences.items())
    )
    document = {
        "build": _published(result.build),
        "merchant_id": merchant_id,
        "currency": currency,
        "by": by,
        "postings": result.postings,
        "totals": result.totals,
        "view": result.view_row,
        "matches_view": not differences,
        "differences": {column: {"postings": total, "view": value} for column, (total, value) in differences.items()},
        "rejects": result.rejects,
    }
    lines = [{"kind": "posting" if by == "event" else "day", **row} for row in result.postings]
    lines += [{"kind": "total", **result.totals}, {"kind": "view", **{column: result.view_row[column] for column in result.totals}}]
    lines += [{"kind": "rejected", **row} for row in result.rejects]
    sections = [("postings" if by == "event" else "postings per day", result.postings), ("totals", [totals, view]), ("rejected rows", result.rejects)]
    if fmt == "csv":
        sections = [("lines", lines)]
    _emit(fmt, f"{merchant_id} {currency}: {_moment(result.build)}; {verdict}", sections, document, currency)
    if differences:
        raise click.ClickException(verdict)
    if fmt == "csv":
        click.echo(verdict, err=True)


#: Maintenance options of the scheduled build, the maintain command and the aging bench.
MAINTAIN_EVERY_OPTION = click.option(
    "--maintain-every",
    type=click.IntRange(min=0),
    default=None,
    help="Maintain tables with at least this many commits since their last maintenance (0: never). [default: $PAYLEDGER_MAINTAIN_EVERY or 24]",
)
RETENTION_OPTION = click.option(
    "--retention-hours",
    type=click.FloatRange(min=1),
    default=None,
    help="History kept for time travel (VACUUM / expire_snapshots). [default: $PAYLEDGER_RETENTION_HOURS or 168]",
)


@main.command("build", context_settings={"ignore_unknown_options": True})
@click.option(
    "--wait", "wait_s", type=click.FloatRange(min=0), default=0, show_default=True, help="Seconds to wait for a running build before giving up (exit 75)."
)
@click.option(
    "--every",
    "every",
    metavar="DURATION",
    callback=lambda _ctx, _param, value: _duration(value),
    help="Build again and again in this process, one build per DURATION (90s, 5m, 1h), until SIGTERM or Ctrl-C.",
)
@click.option("--iterations", type=click.IntRange(min=1), default=None, help="With --every: stop after this many builds.")
@MAINTAIN_EVERY_OPTION
@RETENTION_OPTION
@click.argument("dbt_args", nargs=-1, type=click.UNPROCESSED)
def build_command(
    wait_s: float, every: float | None, iterations: int | None, maintain_every: int | None, retention_hours: float | None, dbt_args: tuple[str, ...]
) -> None:
    """The scheduled build: source freshness, `dbt build DBT_ARGS` (every data test; dbt's unit
    tests are left to `make test`), then table maintenance when due, under the warehouse's lock.

    Logs one JSON object per step on stdout. Exit 0 on success, 1 when freshness or the build fails,
    75 when another build holds the lock (nothing was run).

    With --every, a warm loop: one build per interval in this process (the JVM, dbt's project and the
    JIT's warm-up are paid once). A failed build is logged and the loop goes on; SIGTERM or Ctrl-C
    ends it after the current step, lock released, exit 0.
    """
    from payledger.schedule import build_loop, scheduled_build

    if every is None:
        if iterations is not None:
            raise click.UsageError("--iterations needs --every")
        sys.exit(scheduled_build(wait_s, dbt_args, maintain_every=maintain_every, retention_hours=retention_hours))
    sys.exit(build_loop(every, iterations=iterations, wait_s=wait_s, build_args=dbt_args, maintain_every=maintain_every, retention_hours=retention_hours))


def _duration(value: str | None) -> float | None:
    from payledger.schedule import parse_duration

    if value is None:
        return None
    try:
        return parse_duration(value)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None


API_KEYS_OPTION = click.option(
    "--api-keys",
    "key_file",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar=KEY_FILE_VARIABLE,
    show_envvar=True,
    help="The file of hashed API keys (payledger api-key add).",
)


@main.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (only loopback without --api-keys).")
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True)
@API_KEYS_OPTION
def serve_command(host: str, port: int, key_file: Path | None) -> None:
    """Serve the published balances over HTTP (FastAPI on uvicorn), without Spark: GET
    /v1/merchants/{merchant_id}/balances[?currency=CUR][&as_of_build=ID], GET /v1/health, OpenAPI at
    /docs. Reads the warehouse's publication ($PAYLEDGER_WAREHOUSE) in the default target's format,
    and follows new publications as builds make them. With --api-keys every /v1 request needs
    "Authorization: Bearer KEY", and a key reads only the merchants its entry names."""
    from payledger.apikeys import ApiKeys
    from payledger.formats import target_format
    from payledger.serve import check_host, serve
    from payledger.spark import default_warehouse

    keys = None
    if key_file is not None:
        try:
            keys = ApiKeys.load(key_file)
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint="--api-keys") from None
        if not keys:
            raise click.BadParameter(f"{key_file} holds no keys (add one with payledger api-key add)", param_hint="--api-keys")
    try:
        check_host(host, keys)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--host") from None
    serve(default_warehouse(), target_format(), host, port, keys)


@main.group("api-key")
def api_key_group() -> None:
    """API keys of payledger serve."""


@api_key_group.command("add")
@click.argument("name")
@click.option("--merchant", "merchants", multiple=True, help="A merchant id the key may read (repeat for several).")
@click.option("--all-merchants", is_flag=True, help="The key may read every merchant (the UI's backend).")
@API_KEYS_OPTION
def api_key_add_command(name: str, merchants: tuple[str, ...], all_merchants: bool, key_file: Path | None) -> None:
    """Make a key named NAME, add its SHA-256 digest to the key file (created, mode 0600, when
    missing) and print the key once on stdout: it is stored nowhere else."""
    from payledger.apikeys import new_key

    if key_file is None:
        raise click.UsageError("give the key file: --api-keys FILE or $PAYLEDGER_API_KEYS")
    if all_merchants == bool(merchants):
        raise click.UsageError("give --merchant ID (one or more) or --all-merchants")
    try:
        click.echo(new_key(key_file, name, None if all_merchants else list(merchants)))
    except ValueError as error:
        raise click.ClickException(str(error)) from None


@main.command("maintain")
@RETENTION_OPTION
@click.option(
    "--every",
    "every_commits",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Only tables with at least this many commits since their last maintenance (0: every table).",
)
@click.option("--wait", "wait_s", type=click.FloatRange(min=0), default=0, show_default=True, help="Seconds to wait for a running build (exit 75 after).")
def maintain_command(retention_hours: float | None, every_commits: int, wait_s: float) -> None:
    """Compact small files and row deletes, and apply history retention, on every project table.

    Delta: OPTIMIZE, REORG ... APPLY (PURGE), VACUUM; Iceberg: rewrite_data_files,
    rewrite_position_delete_files, rewrite_manifests, expire_snapshots. Canonical events' days
    that later builds appended to are sorted again by reconciliation bucket, and the dedup index
    once enough ids were appended to it. Runs under the build lock: never during a build. Prints
    one JSON object per table maintained.
    """
    from payledger.locks import BuildLocked
    from payledger.maintain import maintain, retention_hours_setting
    from payledger.spark import default_warehouse

    try:
        done = maintain(
            default_warehouse(),
            every_commits=every_commits,
            retention_hours=retention_hours_setting() if retention_hours is None else retention_hours,
            wait_s=wait_s,
        )
    except BuildLocked as locked:
        raise WarehouseLocked(str(locked)) from None
    for table in done:
        click.echo(json.dumps(table.as_dict()))


@main.command("reconcile")
@click.option("--full", is_flag=True, help="Compare every key (the nightly job, CI); without it, the next rotating slice, as a build does.")
@click.option("--wait", "wait_s", type=click.FloatRange(min=0), default=0, show_default=True, help="Seconds to wait for a running build (exit 75 after).")
def reconcile_command(full: bool, wait_s: float) -> None:
    """Compare the balance view with a recomputation from canonical history: dbt's reconciliation
    and conservation tests, outside a build, under the build lock. A scheduled build compares one
    rotating slice of the keys (var reconcile_slices); --full compares every key.

    Prints one JSON object: success, invocation_id, run (the row recorded in
    payledger_audit.merchant_balance_reconciliation_runs), tests, failures (the keys found wrong,
    at most 100) and errors. Exit 0 when both tests pass, 1 when one fails, 75 when a build holds
    the lock."""
    from payledger.locks import BuildLocked
    from payledger.reconcile import reconcile

    try:
        result = reconcile(full=full, wait_s=wait_s)
    except BuildLocked as locked:
        raise WarehouseLocked(str(locked)) from None
    click.echo(result.as_json())
    if not result.success:
        sys.exit(1)


@main.command("publish")
@click.option("--version", "version", type=int, required=True, help="The view's version to publish (Delta table version, Iceberg snapshot id).")
@click.option("--wait", "wait_s", type=click.FloatRange(min=0), default=0, show_default=True, help="Seconds to wait for a running build (exit 75 after).")
def publish_command(version: int, wait_s: float) -> None:
    """Operators only: publish a committed, retained VERSION of the view by hand (a rollback), until
    the next build publishes. Readers (payledger serve, payledger balance, the relation
    payledger.merchant_balance_published) switch to it. Refuses a version that is not committed or
    whose files retention removed. Runs under the build lock. Prints the publication as JSON."""
    from dataclasses import asdict

    from payledger.locks import BuildLocked, build_lock
    from payledger.publish import PublicationError, publish_version
    from payledger.spark import default_warehouse, get_spark

    warehouse = default_warehouse()
    try:
        with build_lock(warehouse, wait_s):
            publication = publish_version(get_spark(), warehouse, version)
    except BuildLocked as locked:
        raise WarehouseLocked(str(locked)) from None
    except PublicationError as error:
        raise click.ClickException(str(error)) from None
    click.echo(json.dumps(asdict(publication)))


@main.command("thrift")
@click.argument("action", type=click.Choice(["start", "stop", "status"]))
@click.option("--port", type=int, default=10000, show_default=True)
@click.option("--standalone", is_flag=True, help="Also start a standalone master and worker (bin/spark-class) and submit to them.")
def thrift_command(action: str, port: int, standalone: bool) -> None:
    """Start, stop or inspect a Spark Thrift Server on 127.0.0.1 for `dbt ... --target thrift`.

    The server's table format is PAYLEDGER_FORMAT's (delta, the default, or iceberg); set it for
    dbt too.
    """
    from payledger import thrift

    if action == "start":
        result: object = thrift.start(port=port, standalone=standalone)
    elif action == "stop":
        result = thrift.stop()
    else:
        result = thrift.status(port=port)
    click.echo(json.dumps(result))


@main.command("demo")
@click.option("--events", type=click.IntRange(min=1000), default=300_000, show_default=True)
@click.option("--merchants", type=click.IntRange(min=10), default=2_000, show_default=True)
def demo_command(events: int, merchants: int) -> None:
    """Run the main job end to end on the embedded default warehouse (drops its previous demo data)."""
    from rich.console import Console

    from payledger.demo import run_demo
    from payledger.spark import PROJECT_ROOT

    reconciled = run_demo(events, merchants, PROJECT_ROOT / "data" / "demo", Console())
    if not reconciled:
        raise click.ClickException("the view did not reconcile with canonical history (differences above)")


def _report_console(console_class):
    """A rich Console for a bench report: the terminal's width, or 160 columns in a log file."""
    return console_class() if sys.stdout.isatty() else console_class(width=160)


@main.command("bench")
@click.option("--events", type=click.IntRange(min=10_000), default=30_000_000, show_default=True)
@click.option("--merchants", type=click.IntRange(min=100), default=50_000, show_default=True)
def bench_command(events: int, merchants: int) -> None:
    """Benchmark full rebuild, incremental run, policy replay and a peer job; writes target/bench.json."""
    from payledger.bench import bench_environment

    bench_environment()  # before any Spark import: the UI and the bench warehouse
    from rich.console import Console

    from payledger.bench import run_bench
    from payledger.spark import PROJECT_ROOT

    run_bench(events, merchants, _report_console(Console), PROJECT_ROOT / "data" / "bench", PROJECT_ROOT / "target" / "bench.json")


@main.command("bench-serve")
@click.option("--events", type=click.IntRange(min=10_000), default=30_000_000, show_default=True)
@click.option("--merchants", type=click.IntRange(min=100), default=50_000, show_default=True)
@click.option("--seconds", type=click.IntRange(min=1), default=20, show_default=True, help="Length of the idle load run.")
@click.option("--connections", type=click.IntRange(min=1), default=4, show_default=True, help="wrk's open connections (closed loop).")
@click.option("--build-nice", type=click.IntRange(0, 19), default=10, show_default=True, help="The build under load runs at this niceness (nice -n).")
def bench_serve_command(events: int, merchants: int, seconds: int, connections: int, build_nice: int) -> None:
    """Load-test payledger serve (idle and under a build) and time payledger balance from new
    processes; writes target/bench_serve_<format>.json."""
    from payledger.bench import bench_environment

    bench_environment("bench_serve")
    from rich.console import Console

    from payledger.bench_serve import run_bench_serve
    from payledger.spark import PROJECT_ROOT

    console, data = _report_console(Console), PROJECT_ROOT / "data" / "bench_serve"
    run_bench_serve(console, data, PROJECT_ROOT / "target", events=events, merchants=merchants, seconds=seconds, connections=connections, build_nice=build_nice)


@main.command("bench-aging")
@click.option("--events", type=click.IntRange(min=10_000), default=3_000_000, show_default=True)
@click.option("--merchants", type=click.IntRange(min=100), default=5_000, show_default=True)
@click.option("--builds", type=click.IntRange(min=20), default=100, show_default=True)
@click.option(
    "--batch-share",
    type=click.FloatRange(0, 1, min_open=True),
    default=0.0001,
    show_default=True,
    help="New events per build, as a share of the history.",
)
@MAINTAIN_EVERY_OPTION
def bench_aging_command(events: int, merchants: int, builds: int, batch_share: float, maintain_every: int | None) -> None:
    """Many small scheduled builds in a row with maintenance; writes target/bench_aging.json and .png."""
    from payledger.bench import bench_environment

    bench_environment("bench_aging")
    from rich.console import Console

    from payledger.aging import run_aging
    from payledger.maintain import every_commits_setting, retention_hours_setting
    from payledger.spark import PROJECT_ROOT

    figures = run_aging(
        _report_console(Console),
        PROJECT_ROOT / "data" / "bench_aging",
        PROJECT_ROOT / "target",
        events=events,
        merchants=merchants,
        builds=builds,
        batch_share=batch_share,
        maintain_every=every_commits_setting() if maintain_every is None else maintain_every,
        retention_hours=retention_hours_setting(),
    )
    if not figures["reconciled"]:
        raise click.ClickException("the view did not reconcile after the last build (target/bench_aging.json)")
