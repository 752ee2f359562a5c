"""Write-audit-publish: readers see only versions of the view that passed their build's tests.

A build commits the view (one MERGE commit) before dbt's tests run on it. The version it committed
is *published* only when the same dbt invocation ran the view's model and the reconciliation test
(``assert_merchant_balance_current_reconciles``) and every node succeeded. Publication writes a
small JSON document beside the tables, ``<warehouse>/published/<format>/merchant_balance_current.json``:

- ``current``: the published version (``table_format``, the table folder ``location``, ``version``:
  the Delta table version or the Iceberg snapshot id, ``metadata_file``: an Iceberg metadata file
  that holds that snapshot, null on Delta), the build's ``invocation_id``, the version's
  ``source_watermark`` (max ingest_seq folded into it), ``published_at`` (UTC, ISO 8601),
  ``committed_at`` (when the version was committed), the build's ``events_watermark`` and
  ``policy_observed_at`` (from ``payledger.balance_invalidations``), and ``read_version``: the
  version readers open, ``version`` itself or, once table maintenance rewrote the files (same rows,
  ``follow_maintenance``), the maintenance commit after it; ``source_location``: the folder of the
  landing table of events, whose newest position readers compare with the watermark
  (``source_position``);
- ``previous``: the publications before it, newest first, at most ``KEEP - 1``;
- ``last_failed_build``: the latest invocation that ran the view or its reconciliation and failed
  (``invocation_id``, ``failed_at``, ``failures``: dbt's messages), or null. It published nothing.

The document is replaced whole (a temporary file in the same folder, flushed and fsynced, then
``os.replace``), so a reader finds the old document or the new one, never a mix. Readers open the
published version from the table's own files, without Spark or the metastore
(``read_published_view``: ``deltalake`` for Delta, DuckDB's ``iceberg`` extension for Iceberg).
"""

from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from payledger.files import write_atomically
from payledger.formats import TableVersion, format_named
from payledger.warehouse import AUDIT, LANDING_EVENTS, PUBLISHED_RELATION, VIEW

#: Publications kept in the document: the current one and the ones before it.
KEEP = 10
#: The relation Spark readers (``payledger sql``, the Thrift target, BI tools) query for the published
#: version: a view over the view's table at that version (``VERSION AS OF``), replaced on each publication.
#: The nodes whose success in one invocation makes the view's version published.
VIEW_NODE = "model.payledger.merchant_balance_current"
RECONCILIATION_NODE = "test.payledger.assert_merchant_balance_current_reconciles"
#: The view's columns a published read returns.
VIEW_COLUMNS = (
    "merchant_id",
    "currency",
    "available_balance",
    "pending_balance",
    "reserve_hold",
    "last_event_time",
    "source_watermark",
    "policy_observed_at",
)


class PublicationError(RuntimeError):
    """The publication document is unreadable, or a published version cannot be opened."""


@dataclass(frozen=True)
class Publication:
    """One published version of the view (see the module docstring for the fields)."""

    table_format: str
    location: str
    version: int
    metadata_file: str | None
    invocation_id: str
    source_watermark: int | None
    published_at: str
    committed_at: str | None = None
    events_watermark: int | None = None
    policy_observed_at: str | None = None
    read_version: int | None = None
    source_location: str | None = None
    #: The build ran every data test that checks history since the published build, and they passed
    #: (``history_checks_ran``): later builds may check only what came after this one.
    checked: bool = False

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Publication:
        """A publication from its JSON object; ``KeyError`` when a field without a default is
        missing (unknown fields are ignored)."""
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data or f.default is MISSING})

    @property
    def readable_version(self) -> int:
        """The version that holds this publication's rows now: ``read_version``, else ``version``."""
        return self.version if self.read_version is None else self.read_version


@dataclass
class PublicationDocument:
    """The whole document: ``current`` (None before the first publication), ``previous`` (newest
    first) and ``last_failed_build`` (a dict, or None)."""

    current: Publication | None = None
    previous: list[Publication] = field(default_factory=list)
    last_failed_build: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        """The document as written: ``view``, ``current``, ``previous``, ``last_failed_build``."""
        return {
            "view": VIEW,
            "current": asdict(self.current) if self.current else None,
            "previous": [asdict(p) for p in self.previous],
            "last_failed_build": self.last_failed_build,
        }

    def failed_since_published(self) -> bool:
        """Whether a build failed after the current publication (or before any)."""
        if self.last_failed_build is None:
            return False
        return self.current is None or self.last_failed_build["failed_at"] > self.current.published_at


def publication_path(warehouse: Path, table_format: str) -> Path:
    """``<warehouse>/published/<table_format>/merchant_balance_current.json``."""
    return Path(warehouse) / "published" / table_format / f"{VIEW.split('.')[-1]}.json"


def read_document(warehouse: Path, table_format: str) -> PublicationDocument:
    """The publication document of ``warehouse`` in ``table_format``; an empty one when nothing was
    published or failed yet. Raises ``PublicationError`` when the file exists but is not a
    publication document."""
    path = publication_path(warehouse, table_format)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return PublicationDocument()
    except (OSError, ValueError) as error:
        raise PublicationError(f"{path} is not a readable publication document: {error}") from error
    try:
        return PublicationDocument(
            Publication.from_dict(data["current"]) if data.get("current") else None,
            [Publication.from_dict(p) for p in data.get("previous", [])],
            data.get("last_failed_build"),
        )
    except (TypeError, KeyError, AttributeError) as error:
        raise PublicationError(f"{path} is not a publication document: {error}") from error


def write_document(warehouse: Path, table_format: str, document: PublicationDocument) -> Path:
    """Replace the publication document atomically (``files.write_atomically``: a temporary file
    in the same folder, fsynced, renamed over the old one). Returns its path."""
    text = json.dumps(document.as_dict(), indent=1, sort_keys=True) + "\n"
    return write_atomically(publication_path(warehouse, table_format), text)


def record_publication(warehouse: Path, publication: Publication) -> PublicationDocument:
    """Make ``publication`` the current one; the one before it moves to ``previous`` (at most
    ``KEEP - 1`` kept). Returns the document written."""
    document = read_document(warehouse, publication.table_format)
    if document.current is not None:
        document.previous = [document.current, *document.previous][: KEEP - 1]
    document.current = publication
    write_document(warehouse, publication.table_format, document)
    return document


def record_failed_build(warehouse: Path, table_format: str, invocation_id: str, failures: list[str]) -> PublicationDocument:
    """Note a build that failed and published nothing; the current publication stays."""
    document = read_document(warehouse, table_format)
    document.last_failed_build = {"invocation_id": invocation_id, "failed_at": _now(), "failures": failures[:20]}
    write_document(warehouse, table_format, document)
    return document


def forget(warehouse: Path, table_format: str) -> None:
    """Remove the publication document (the view it points at was dropped)."""
    publication_path(warehouse, table_format).unlink(missing_ok=True)


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="microseconds")


def table_location(spark, table_format: str, table: str) -> str:
    """The folder of ``table`` as its catalog records it (a metastore call, no Spark job)."""
    return format_named(table_format).location(spark, table)


def source_position(table_format: str, location: str) -> int | None:
    """The newest source position (max ``ingest_seq``) in the current version of the landing
    table at ``location``, from its file statistics, without Spark or reading data: Delta's
    per-file ``maxValues`` (``deltalake``), Iceberg's per-file upper bounds (``pyiceberg``, from
    the newest ``metadata/*.metadata.json`` by write time). None for an empty table or files
    without statistics. Raises the readers' errors when the table cannot be opened."""
    return format_named(table_format).source_position(location)


def committed_version(spark, table_format: str, table: str = VIEW) -> TableVersion:
    """``table``'s current version. Source: Delta: the catalog's location of the table and its log
    (``deltalake``: the version; the commit file's modification time); Iceberg: the table as its
    catalog loads it now (Iceberg's Java API: ``currentSnapshot``, ``operations().current()``).
    No Spark job.
    """
    return format_named(table_format).committed_version(spark, table)


def read_table_version(
    table_format: str, location: str, version: int, metadata_file: str | None, columns: tuple[str, ...], where: tuple[str, str] | None = None
):
    """``columns`` of one committed version of a table, as a ``pyarrow.Table``, from its files
    (no Spark): Delta through ``deltalake`` (its SQL engine reads deletion vectors), Iceberg through
    DuckDB's ``iceberg_scan`` from ``metadata_file`` (position deletes applied). ``where``: (column,
    string value), an equality filter (the value must already be checked: on Delta it is quoted,
    not escaped).
    Raises the readers' own errors, for example when retention removed the version's files."""
    return _read_yielding(*format_named(table_format).read_version(location, version, metadata_file, columns, where))


def read_table_current(table_format: str, location: str, columns: tuple[str, ...], where: tuple[str, str] | None = None):
    """``read_table_version`` of the table's latest committed version, found from its folder
    alone (``formats.TableFormat.read_current``): no Spark, no metastore."""
    return _read_yielding(*format_named(table_format).read_current(location, columns, where))


def _read_yielding(schema, batches):
    """A ``pyarrow.Table`` of ``batches``, yielding Python's lock after each one: reading a whole
    version in one call held it for 12-31 ms at 75,000 rows, which a server answering requests
    meanwhile waited out."""
    import pyarrow as pa

    read = []
    for batch in batches:
        read.append(batch)
        time.sleep(0)
    return pa.Table.from_batches(read, schema=schema)


def read_published_view(publication: Publication, merchant_id: str | None = None, columns: tuple[str, ...] = VIEW_COLUMNS):
    """The rows of the published version (``columns`` of the view, ``VIEW_COLUMNS`` by default),
    as a ``pyarrow.Table``, read from the table's files without Spark or the metastore
    (``read_table_version`` of its ``readable_version``). ``merchant_id`` filters to one merchant
    (``ValueError`` unless it matches ``history.check_key``). Amounts are ``contract.AMOUNT_TYPE``
    (decimal128(18, 4)) in the currency's major unit. Raises ``PublicationError`` when the version cannot be opened (for
    example removed by retention)."""
    if merchant_id is not None:
        from payledger.history import check_key

        check_key(merchant_id)
    try:
        return read_table_version(
            publication.table_format,
            publication.location,
            publication.readable_version,
            publication.metadata_file,
            columns,
            None if merchant_id is None else ("merchant_id", merchant_id),
        )
    except Exception as error:  # deltalake and DuckDB raise their own error types
        raise PublicationError(f"cannot read version {publication.readable_version} of {VIEW} at {publication.location}: {error}") from error


def publish_after(invocation, spark, warehouse: Path) -> Publication | None:
    """Publish what a ``dbt build`` wrote, if it was audited: it ran the view's model and the
    reconciliation test, and every node succeeded. Then the view's current version becomes the
    published one (unless it already is), once the readers can open it. A failed invocation that
    ran either node, or a version the readers cannot open, is recorded as ``last_failed_build`` and
    publishes nothing. Returns the publication that holds the audited
    version (new, or the current one when the build changed nothing), or None when nothing was
    audited.

    ``invocation``: a ``payledger.dbt.DbtInvocation``; ``spark``: the session dbt built with.
    """
    from payledger.formats import session_format

    ran = set(invocation.nodes)
    if invocation.args[:1] != ("build",) or (VIEW_NODE not in ran and RECONCILIATION_NODE not in ran):
        return None  # only `dbt build` writes and audits (compile, for one, lists nodes it never ran)
    table_format = session_format(spark)
    if not invocation.success:
        record_failed_build(warehouse, table_format, invocation.invocation_id, invocation.failures() or [str(invocation.exception)])
        return None
    if not (VIEW_NODE in ran and RECONCILIATION_NODE in ran):
        return None
    view = committed_version(spark, table_format)
    checked = history_checks_ran(invocation)
    document = read_document(warehouse, table_format)
    current = document.current
    if current is not None and (current.location, current.readable_version) == (view.location, view.version):
        # The build changed nothing: its version is published already, and now checked if it ran
        # every check.
        if checked and not current.checked:
            document.current = current = replace(current, checked=True)
            write_document(warehouse, table_format, document)
        return current
    publication = Publication(
        table_format,
        view.location,
        view.version,
        view.metadata_file,
        invocation.invocation_id,
        None,
        _now(),
        view.committed_at,
        *_audit_marks(spark, table_format, invocation.invocation_id, view.version),
        checked=checked,
    )
    try:
        return _publish_readable(spark, warehouse, publication)
    except PublicationError as error:  # a version the readers cannot open is not published
        record_failed_build(warehouse, table_format, invocation.invocation_id, [f"publication: {error}"])
        return None


def _publish_readable(spark, warehouse: Path, publication: Publication) -> Publication:
    """Make ``publication`` current once the readers can open its version: its ``source_watermark``
    from the rows, its ``source_location`` from the catalog, then the document and the relation.
    Raises ``PublicationError`` (nothing recorded) when the version cannot be read."""
    marks = [mark for mark in read_published_view(publication).column("source_watermark").to_pylist() if mark is not None]
    source = table_location(spark, publication.table_format, LANDING_EVENTS) if spark.catalog.tableExists(LANDING_EVENTS) else None
    publication = replace(publication, source_watermark=max(marks) if marks else None, source_location=source)
    record_publication(warehouse, publication)
    point_relation(spark, publication)
    return publication


def point_relation(spark, publication: Publication) -> None:
    """Replace ``PUBLISHED_RELATION`` with a view of the view's table at ``publication``'s readable
    version (one metastore statement; Spark resolves the version when a query reads it)."""
    spark.sql(f"create or replace view {PUBLISHED_RELATION} as select * from {VIEW} version as of {publication.readable_version}")


def publish_version(spark, warehouse: Path, version: int) -> Publication:
    """Publish the view's committed ``version`` (a Delta table version or an Iceberg snapshot id) by
    hand, for a rollback: it becomes the current publication (the one it replaces moves to
    ``previous``) until a build publishes again. The caller holds the warehouse's build lock.

    The build is the one ``balance_invalidations`` recorded for that version (for a maintenance
    commit, for the version it rewrote). Raises ``PublicationError`` when ``version`` is not a
    committed version of the view, when retention removed its files (and no later maintenance
    commit holds the same rows), or when no build recorded it.
    """
    from payledger.formats import readable_commits, session_format, table_commits, utc_from_micros
    from payledger.history import read_version

    table_format = session_format(spark)
    commits = table_commits(spark, VIEW)
    by_version = {commit.version: commit for commit in commits}
    if version not in by_version:
        if spark.sql(f"select 1 from {AUDIT} where view_version = {int(version)} limit 1").collect():
            raise PublicationError(f"version {version} of {VIEW} is beyond the retained history: maintenance expired it")
        recent = ", ".join(str(commit.version) for commit in commits[-5:])
        raise PublicationError(f"{version} is not a committed version of {VIEW} (the latest: {recent or 'none'})")
    readable = read_version(commits, {commit.version for commit in readable_commits(spark, VIEW)}, version)
    if readable is None:
        raise PublicationError(f"version {version} of {VIEW} is beyond the retained history: maintenance removed its files")
    built, recorded = version, []
    while True:  # the build that recorded this version; for a maintenance commit, the version it rewrote
        recorded = spark.sql(
            f"""
            select invocation_id, max(events_watermark) as events_watermark, unix_micros(max(policy_observed_at)) as observed_us
            from {AUDIT} where view_version = {int(built)} group by invocation_id order by min(recorded_at) limit 1
            """
        ).collect()
        if recorded or by_version[built].kind != "maintenance" or by_version[built].parent not in by_version:
            break
        built = by_version[built].parent
    if not recorded:
        raise PublicationError(f"no build recorded version {built} of {VIEW} in {AUDIT}: it cannot be published")
    view = committed_version(spark, table_format)
    committed_at = by_version[version].committed_at.astimezone(dt.UTC).isoformat(timespec="milliseconds")
    publication = Publication(
        table_format,
        view.location,
        version,
        view.metadata_file,
        recorded[0]["invocation_id"],
        None,
        _now(),
        committed_at,
        recorded[0]["events_watermark"],
        None if recorded[0]["observed_us"] is None else iso_utc(utc_from_micros(recorded[0]["observed_us"])),
        None if readable == version else readable,
    )
    try:
        return _publish_readable(spark, warehouse, publication)
    except PublicationError as error:
        raise PublicationError(f"version {version} of {VIEW} cannot be read from its files: {error}") from error


def _audit_marks(spark, table_format: str, invocation_id: str, view_version: int | None = None) -> tuple[int | None, str | None]:
    """The build's ``events_watermark`` and ``policy_observed_at`` (ISO, UTC) as
    ``payledger.balance_invalidations`` recorded them with its view version (read from the audit's
    files, no Spark job). A build with nothing new records none: then those of the build that
    wrote ``view_version``, the version it publishes; (None, None) when neither recorded any."""
    if not spark.catalog.tableExists(AUDIT):
        return None, None
    audit = committed_version(spark, table_format, AUDIT)
    columns = ("events_watermark", "policy_observed_at", "view_version")

    def recorded(where: tuple[str, str] | None) -> list[dict]:
        found = read_table_version(table_format, audit.location, audit.version, audit.metadata_file, columns, where)
        return [r for r in found.to_pylist() if r["view_version"] is not None]

    rows = recorded(("invocation_id", invocation_id))
    if not rows and view_version is not None:
        rows = [r for r in recorded(None) if r["view_version"] == view_version]
    if not rows:
        return None, None
    observed = [r["policy_observed_at"] for r in rows if r["policy_observed_at"] is not None]
    return max(r["events_watermark"] for r in rows), iso_utc(max(observed)) if observed else None


def as_utc(moment: dt.datetime) -> dt.datetime:
    """``moment`` in UTC; a naive time (Spark's and Iceberg's timestamp without zone) is UTC."""
    return (moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)).astimezone(dt.UTC)


def iso_utc(moment: dt.datetime | None) -> str | None:
    """ISO 8601 in UTC with microseconds (``as_utc``); None stays None."""
    return None if moment is None else as_utc(moment).isoformat(timespec="microseconds")


def follow_maintenance(spark, warehouse: Path) -> Publication | None:
    """After table maintenance of the view: when only maintenance commits (compaction, purge,
    vacuum: the same rows) came after the current publication's readable version, point its
    ``read_version`` (and, on Iceberg, ``metadata_file``) at the view's current version, whose
    files retention keeps, and so for the kept publications of that same version. Returns the
    publication then current (None when nothing is published; unchanged when a build moved the
    view on, which publishes on its own)."""
    from payledger.formats import session_format, table_commits

    table_format = session_format(spark)
    document = read_document(warehouse, table_format)
    current = document.current
    if current is None:
        return None
    view = committed_version(spark, table_format)
    if view.location != current.location or view.version == current.readable_version:
        return current
    commits = table_commits(spark, VIEW)
    position = {commit.version: index for index, commit in enumerate(commits)}
    if current.readable_version not in position or view.version not in position:
        return current
    between = commits[position[current.readable_version] + 1 : position[view.version] + 1]
    if not between or any(commit.kind != "maintenance" for commit in between):
        return current
    # Kept publications of the same rows (a rollback's) follow too.
    moved, follow = current.readable_version, {"read_version": view.version, "metadata_file": view.metadata_file}
    document.current = replace(current, **follow)
    document.previous = [replace(p, **follow) if p.readable_version == moved else p for p in document.previous]
    write_document(warehouse, table_format, document)
    point_relation(spark, document.current)
    return document.current


#: The dbt macro whose tests check history since the published build (macros/reconciliation/).
CHECKED_SINCE_MACRO = "macro.payledger.checked_since"


def history_checks_ran(invocation, manifest: dict | None = None) -> bool:
    """Whether ``invocation`` (a ``payledger.dbt.DbtInvocation``) ran, and passed, every data test
    that checks history since the published build: the singular tests that call ``checked_since``
    and the generic tests given ``scoped_by``, as the project's manifest lists them (``manifest``:
    its parsed ``manifest.json``; default ``invocation.manifest``). False when there is no manifest.
    """
    manifest = manifest if manifest is not None else getattr(invocation, "manifest", None)
    if not manifest:
        return False
    scoped = {
        uid
        for uid, node in manifest.get("nodes", {}).items()
        if node.get("resource_type") == "test"
        and (CHECKED_SINCE_MACRO in node.get("depends_on", {}).get("macros", []) or "scoped_by" in ((node.get("test_metadata") or {}).get("kwargs") or {}))
    }
    passed = {uid for uid, result in invocation.nodes.items() if str(result.status) == "pass"}
    return bool(scoped) and scoped <= passed
