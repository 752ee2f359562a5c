"""The balance as published by a past build, and why: ``payledger balance`` and ``payledger explain``.

Every build that changes the view records, in ``payledger.balance_invalidations``, the view's
version it published (``view_version``: Delta table version, Iceberg snapshot id) with its events
watermark and the latest snapshot observation it knew (``policy_observed_at``). A moment maps to the
last build whose version was committed by then; a build id maps to its version.

Two ways to read: without a JVM (``published_balance``, ``published_explain``), from the files of
the builds that published (``payledger.publish``), their postings made in Python by the models'
rules (``payledger.postings``); and on Spark (``balance``, ``explain``), for any build the audit
recorded, through the project's macros (``balance_as_of``, ``balance_explain``,
``balance_explain_rejects`` in ``macros/history/``), compiled by dbt in this process and run on its
Spark session, so that an explanation posts events with the fold the models use
(``post_payment_events``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import re
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from payledger.formats import Commit, readable_commits, table_commits, utc_from_micros
from payledger.publish import VIEW_COLUMNS, Publication, PublicationError, read_document, read_published_view, read_table_current
from payledger.spark import project_vars
from payledger.warehouse import AUDIT, CANONICAL, EVENT_TYPES, POLICY_SNAPSHOT, REJECTS, SEGMENT_SNAPSHOT, VIEW, folder_beside

#: The forms of a merchant id, a currency and a build (dbt invocation id): dbt_project.yml's var
#: ``identifier_patterns``, which the macros read too (``identifier_pattern``).
_PATTERNS = project_vars()["identifier_patterns"]
MERCHANT_PATTERN = re.compile(_PATTERNS["merchant_id"])
CURRENCY_PATTERN = re.compile(_PATTERNS["currency"])
BUILD_PATTERN = re.compile(_PATTERNS["invocation_id"])
#: The balance columns an explanation's postings add up to.
BALANCE_FIELDS = (("available_balance", "available_delta"), ("pending_balance", "pending_delta"), ("reserve_hold", "reserve_delta"))


class HistoryError(RuntimeError):
    """The asked moment, build, merchant or currency has no published balance; the message says
    what is available instead."""


@dataclass(frozen=True)
class PublishedBuild:
    """A build that published a version of the view: its dbt ``invocation_id``, ``view_version``,
    when that version was committed (``committed_at``, UTC; None when the version is no longer in
    the table's history), ``events_watermark`` (max ingest_seq classified after it),
    ``policy_observed_at`` (latest snapshot capture it knew, UTC) and ``read_version``: the version
    time travel reads for it, ``view_version`` itself or, once retention removed that, the first
    retained version after it when only maintenance (same rows) came between; None when its rows
    can no longer be read."""

    invocation_id: str
    view_version: int
    committed_at: dt.datetime | None
    events_watermark: int | None
    policy_observed_at: dt.datetime | None
    read_version: int | None

    def jinja_literal(self) -> str:
        """This build as the macros' ``build`` argument: a Jinja dict of what they read from the
        audit for a build id (``_published_build``), so that they use this resolution instead of
        resolving the build again."""
        observed = None if self.policy_observed_at is None else self.policy_observed_at.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
        values = {
            "invocation_id": self.invocation_id,
            "view_version": self.view_version,
            "events_watermark": self.events_watermark,
            "policy_observed_at": observed,
        }
        return "{" + ", ".join(f"{json.dumps(name)}: {_literal(value)}" for name, value in values.items()) + "}"

    @property
    def readable(self) -> bool:
        return self.read_version is not None

    def describe(self) -> str:
        when = self.committed_at.isoformat(sep=" ", timespec="seconds") if self.committed_at else "time unknown"
        return f"build {self.invocation_id} (view version {self.view_version}, committed {when})"


def published_builds(spark) -> list[PublishedBuild]:
    """Every build recorded in the audit with a view version, in commit order (oldest first).

    Source: ``payledger.balance_invalidations`` (one row per slice; rows of a build share its
    version) and the view's commit history (``formats.table_commits`` / ``readable_commits``).
    Empty when nothing has been built.
    """
    if not spark.catalog.tableExists(AUDIT) or "view_version" not in spark.table(AUDIT).columns:
        return []
    rows = spark.sql(
        f"""
        select invocation_id, max(view_version) as view_version, max(events_watermark) as events_watermark,
            unix_micros(max(policy_observed_at)) as observed_us, max(recorded_at) as last_recorded_at
        from {AUDIT}
        where view_version is not null
        group by invocation_id
        order by last_recorded_at
        """
    ).collect()
    commits = table_commits(spark, VIEW)
    by_version: dict[int, Commit] = {commit.version: commit for commit in commits}
    readable = {commit.version for commit in readable_commits(spark, VIEW)}
    return [
        PublishedBuild(
            row["invocation_id"],
            int(row["view_version"]),
            by_version[row["view_version"]].committed_at if row["view_version"] in by_version else None,
            int(row["events_watermark"]),
            None if row["observed_us"] is None else utc_from_micros(row["observed_us"]),
            read_version(commits, readable, int(row["view_version"])),
        )
        for row in rows
    ]


def read_version(commits: list[Commit], readable: set[int], version: int) -> int | None:
    """The version that holds ``version``'s rows and time travel can still read: ``version`` when
    it is ``readable``, else the first readable one after it if only maintenance commits (compaction,
    purge, vacuum: the same rows) come between; None otherwise.

    ``commits``: the table's retained commits, oldest first. The next commit after a version is the
    one whose parent it is (Iceberg's expire_snapshots removes expired snapshots from the list, but
    the first retained one still names its parent), else the next in the list (Delta keeps its log).
    """
    by_parent = {commit.parent: commit for commit in commits if commit.parent is not None}
    position = {commit.version: index for index, commit in enumerate(commits)}
    current = version
    while current not in readable:
        following = by_parent.get(current)
        if following is None and current in position and position[current] + 1 < len(commits):
            following = commits[position[current] + 1]
        if following is None or following.kind != "maintenance":
            return None
        current = following.version
    return current


def _available(builds: list[PublishedBuild]) -> str:
    readable = [b for b in builds if b.readable]
    if not readable:
        return "no build's version is readable any more"
    return f"available: from {readable[0].describe()} to {readable[-1].describe()} ({len(readable)} builds)"


def resolve_build(spark, as_of: dt.datetime | None = None, build: str | None = None, now: dt.datetime | None = None) -> PublishedBuild:
    """The build whose published version answers the question: the build ``build`` (an
    invocation id), or the last build whose view version was committed at or before ``as_of``
    (timezone-aware), or the latest build when neither is given (``choose_build`` over
    ``published_builds``).

    Raises ``HistoryError`` when nothing was built, the id is unknown (a build that changed nothing
    publishes no version), ``as_of`` is before the first build or in the future, or the version is
    beyond the retained history (VACUUM / expire_snapshots); the message names the range available.
    """
    if as_of is not None and build is not None:
        raise HistoryError("give --as-of or --build, not both")
    builds = published_builds(spark)
    if not builds:
        raise HistoryError(
            f"no build has recorded the version of {VIEW} it published yet: run dbt build (builds from before "
            "balance_invalidations.view_version existed cannot be asked for; the current version can)"
        )
    chosen = choose_build(builds, as_of, build, now)
    if not chosen.readable:
        raise HistoryError(
            f"{chosen.describe()} is beyond the retained history (maintenance keeps PAYLEDGER_RETENTION_HOURS of versions); {_available(builds)}"
        )
    return chosen


def choose_build(builds: list[PublishedBuild], as_of: dt.datetime | None = None, build: str | None = None, now: dt.datetime | None = None) -> PublishedBuild:
    """Of ``builds`` (oldest first, not empty): the one named ``build``, else the last committed at
    or before ``as_of``, else the latest. ``HistoryError`` for an unknown build or a moment before
    the first build or in the future."""
    if build is not None:
        found = [b for b in builds if b.invocation_id == build]
        if not found:
            raise HistoryError(
                f"build {build} published no version of {VIEW}: it is not a build of this warehouse, or it changed nothing "
                f"(such a build writes no version; ask for the time instead with --as-of); {_available(builds)}"
            )
        return found[-1]  # the latest publication of it (a rollback may have published it again)
    if as_of is not None:
        now = now or dt.datetime.now(dt.UTC)
        if as_of > now:
            raise HistoryError(f"{as_of.isoformat(sep=' ')} is in the future; {_available(builds)}")
        dated = [b for b in builds if b.committed_at is not None]
        before = [b for b in dated if b.committed_at <= as_of]
        if not before:
            first = dated[0].describe() if dated else builds[0].describe()
            raise HistoryError(f"{as_of.isoformat(sep=' ')} is before the first build, {first}; {_available(builds)}")
        return max(reversed(before), key=lambda b: b.committed_at)  # a rollback republishes an older version
    return builds[-1]


def check_key(merchant_id: str, currency: str | None = None) -> None:
    """Raise ``ValueError`` unless ``merchant_id`` is 1-64 letters, digits and ``_ . : -`` and
    ``currency`` (when given) is 3 uppercase letters: the shapes the macros accept."""
    if not MERCHANT_PATTERN.fullmatch(merchant_id):
        raise ValueError(f"merchant id must be letters, digits and _ . : - (at most 64), got {merchant_id!r}")
    if currency is not None and not CURRENCY_PATTERN.fullmatch(currency):
        raise ValueError(f"currency must be an ISO 4217 code, 3 uppercase letters, got {currency!r}")


def check_build_id(build: str) -> None:
    """Raise ``ValueError`` unless ``build`` looks like a dbt invocation id (a lowercase UUID)."""
    if not BUILD_PATTERN.fullmatch(build):
        raise ValueError(f"build must be a dbt invocation id (a lowercase UUID), got {build!r}")


def compile_queries(calls: dict[str, str], target_path: Path | None = None) -> dict[str, str]:
    """Compile macro calls to SQL in one dbt invocation (``dbt compile --inline``).

    ``calls`` maps a name to a Jinja expression such as ``balance_as_of(merchant_id='m_1')``
    (values already checked: they are pasted into the template). Returns ``{name: sql}``. Raises
    ``HistoryError`` with dbt's message when compilation fails (for example an unknown build).
    """
    from payledger.dbt import run_dbt

    template = "{{ tojson({" + ", ".join(f"{json.dumps(name)}: {call}" for name, call in calls.items()) + "}) }}"
    # Without dbt's relation cache: filling it lists every schema the project builds (one `show
    # table extended` each) before compiling; the macros look up the one relation they read
    # (`load_relation`), which lists that schema only.
    with contextlib.redirect_stdout(io.StringIO()):  # dbt prints an inline node's SQL even with --quiet
        result = run_dbt("compile", "--no-populate-cache", "--inline", template, target_path=target_path)
    if not result.success or not result.nodes:
        raise HistoryError(f"dbt could not compile the query: {result.exception or result.failures()}")
    compiled = next(iter(result.nodes.values())).node.compiled_code
    return json.loads(compiled)


def _literal(value: Any) -> str:
    return "none" if value is None else json.dumps(value)


def _rows(spark, sql: str) -> list[dict[str, Any]]:
    return [row.asDict() for row in spark.sql(sql).collect()]


@dataclass
class Balance:
    """``payledger balance``: the view's rows for one merchant (and currency) as published by
    ``build`` (None: the view's current version) (``rows``: the view's columns, amounts as Decimal,
    times UTC)."""

    build: PublishedBuild | None
    rows: list[dict[str, Any]]


def balance(
    spark, merchant_id: str, currency: str | None = None, as_of: dt.datetime | None = None, build: str | None = None, target_path: Path | None = None
) -> Balance:
    """The view's rows of ``merchant_id`` (all its currencies, or ``currency``) in the version
    ``resolve_build(as_of, build)`` picks (the current version when neither is given), through the
    macro ``balance_as_of``. Raises ``ValueError`` for malformed ids, ``HistoryError`` when the
    moment or build has no readable version or the merchant (currency) had no balance in it.
    """
    check_key(merchant_id, currency)
    if build is not None:
        check_build_id(build)
    chosen = None if as_of is None and build is None else resolve_build(spark, as_of=as_of, build=build)
    if chosen is None and not spark.catalog.tableExists(VIEW):
        raise HistoryError(f"{VIEW} does not exist yet (run dbt build first)")
    at = "" if chosen is None else f", version={chosen.read_version}"
    sql = compile_queries({"view": f"balance_as_of(merchant_id={_literal(merchant_id)}{at})"}, target_path)["view"]
    return Balance(chosen, _only_currency(_rows(spark, sql), merchant_id, currency, chosen))


def _only_currency(rows: list[dict[str, Any]], merchant_id: str, currency: str | None, chosen: PublishedBuild | None) -> list[dict[str, Any]]:
    where = "the current view" if chosen is None else f"the view published by {chosen.describe()}"
    if not rows:
        raise HistoryError(f"merchant {merchant_id} has no balance in {where}")
    if currency is None:
        return sorted(rows, key=lambda r: r["currency"])
    picked = [r for r in rows if r["currency"] == currency]
    if not picked:
        held = ", ".join(sorted(r["currency"] for r in rows))
        raise HistoryError(f"merchant {merchant_id} has no {currency} balance in {where}; it holds {held}")
    return picked


#: The columns of a rejected row in an explanation (those of the macro ``balance_explain_rejects``).
REJECT_COLUMNS = ("ingest_seq", "event_id", "currency", "event_type", "amount", "event_time", "rejection_reason", "duplicate_of_ingest_seq")
#: The view's columns ``payledger balance`` prints (those of the macro ``balance_as_of``).
BALANCE_COLUMNS = (*VIEW_COLUMNS, "written_by_invocation_id", "written_at")


def _build_of(publication: Publication, readable: bool = True) -> PublishedBuild:
    def utc(value: str | None) -> dt.datetime | None:
        return None if value is None else dt.datetime.fromisoformat(value)

    return PublishedBuild(
        publication.invocation_id,
        publication.version,
        utc(publication.committed_at),
        publication.events_watermark,
        utc(publication.policy_observed_at),
        publication.readable_version if readable else None,
    )


def published_balance(
    warehouse: Path,
    table_format: str,
    merchant_id: str,
    currency: str | None = None,
    as_of: dt.datetime | None = None,
    build: str | None = None,
    now: dt.datetime | None = None,
) -> Balance:
    """``balance`` without a JVM: the view's rows of ``merchant_id`` (all its currencies, or
    ``currency``) in a *published* version, read from the table's files (``payledger.publish``):
    the current publication, or the kept one (``publish.KEEP``) made by ``build``, or the last one
    committed at or before ``as_of``. Builds whose tests failed published nothing and cannot be
    asked for. Raises ``ValueError`` for malformed ids, ``HistoryError`` when nothing is published,
    the build or moment has no kept publication, its version is beyond the retained history, or
    the merchant (currency) had no balance in it; the message names the publications available.
    """
    return _published_rows(warehouse, table_format, merchant_id, currency, as_of, build, now)[1]


def _published_rows(
    warehouse: Path, table_format: str, merchant_id: str, currency: str | None, as_of: dt.datetime | None, build: str | None, now: dt.datetime | None
) -> tuple[Publication, Balance]:
    """``published_balance`` with the publication it read."""
    check_key(merchant_id, currency)
    if build is not None:
        check_build_id(build)
    if as_of is not None and build is not None:
        raise HistoryError("give --as-of or --build, not both")
    document = read_document(warehouse, table_format)
    kept = [p for p in [document.current, *document.previous] if p is not None][::-1]
    if not kept:
        raise HistoryError(f"no build has published a version of {VIEW} in {warehouse} ({table_format}) yet: run dbt build (payledger build)")
    builds = [_build_of(p) for p in kept]
    chosen = choose_build(builds, as_of, build, now)
    publication = kept[builds.index(chosen)]
    try:
        rows = read_published_view(publication, merchant_id, BALANCE_COLUMNS).to_pylist()
    except PublicationError:
        readable = [_build_of(p, _opens(p)) for p in kept]
        raise HistoryError(
            f"{chosen.describe()} is beyond the retained history (maintenance keeps PAYLEDGER_RETENTION_HOURS of versions); {_available(readable)}"
        ) from None
    rows = [{column: _naive_utc(value) for column, value in row.items()} for row in rows]
    return publication, Balance(chosen, _only_currency(rows, merchant_id, currency, chosen))


def _opens(publication: Publication) -> bool:
    try:
        read_published_view(publication, columns=("merchant_id",))
    except PublicationError:
        return False
    return True


def _naive_utc(value: Any) -> Any:
    """A timezone-aware time as naive UTC, as Spark returns the view's timestamps."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC).replace(tzinfo=None)
    return value


@dataclass
class Explanation:
    """``payledger explain``: the postings behind one balance as published by ``build``.

    ``postings``: one dict per accepted event (``by="event"``: event_id, event_type, amount,
    event_time, ingest_seq, available/pending/reserve deltas, segment, segment_observed_at,
    reserve_pct, hold_amount, policy_effective_from_date, policy_observed_at) or per day
    (``by="day"``); ``totals``: the sums of the deltas, keyed by the view's balance columns
    (Decimal, major units); ``view_row``: the view's row in the build's version; ``rejects``: the
    merchant's rejected rows (any currency) the build had classified, with their reasons.
    """

    build: PublishedBuild
    merchant_id: str
    currency: str
    by: str
    postings: list[dict[str, Any]]
    view_row: dict[str, Any]
    rejects: list[dict[str, Any]]
    totals: dict[str, Decimal] = field(init=False)

    def __post_init__(self) -> None:
        self.totals = {column: sum((p[delta] for p in self.postings), Decimal(0)) for column, delta in BALANCE_FIELDS}

    def differences(self) -> dict[str, tuple[Decimal, Decimal]]:
        """``{balance column: (postings total, view value)}`` where they differ; empty when they agree."""
        return {column: (self.totals[column], self.view_row[column]) for column, _ in BALANCE_FIELDS if self.totals[column] != self.view_row[column]}


def explain(
    spark,
    merchant_id: str,
    currency: str,
    as_of: dt.datetime | None = None,
    build: str | None = None,
    by: str = "event",
    target_path: Path | None = None,
) -> Explanation:
    """The postings that make up (merchant_id, currency)'s balance in the version
    ``resolve_build(as_of, build)`` picks, through the macros ``balance_explain`` (the models' fold,
    ``post_payment_events``, over the events the build had folded, with the versions it knew),
    ``balance_as_of`` and ``balance_explain_rejects``. ``by``: ``event`` or ``day``. Raises
    ``ValueError`` for malformed values, ``HistoryError`` as ``balance`` does.
    """
    check_key(merchant_id, currency)
    if by not in ("event", "day"):
        raise ValueError(f"by must be event or day, got {by!r}")
    if build is not None:
        check_build_id(build)
    chosen = resolve_build(spark, as_of=as_of, build=build)
    key, at = f"merchant_id={_literal(merchant_id)}", f"build={chosen.jinja_literal()}"
    queries = compile_queries(
        {
            "view": f"balance_as_of({key}, version={chosen.read_version})",
            "postings": f"balance_explain({key}, currency={_literal(currency)}, {at}, by={_literal(by)})",
            "rejects": f"balance_explain_rejects({key}, {at})",
        },
        target_path,
    )
    view_row = _only_currency(_rows(spark, queries["view"]), merchant_id, currency, chosen)[0]
    return Explanation(chosen, merchant_id, currency, by, _rows(spark, queries["postings"]), view_row, _rows(spark, queries["rejects"]))


def published_explain(
    warehouse: Path,
    table_format: str,
    merchant_id: str,
    currency: str,
    as_of: dt.datetime | None = None,
    build: str | None = None,
    by: str = "event",
    now: dt.datetime | None = None,
) -> Explanation:
    """``explain`` without a JVM, for a *published* build (chosen as ``published_balance`` chooses
    it): the view's row from the published version; the postings of the accepted events the build
    had classified for the key (ingest_seq up to its events watermark), posted in Python
    (``payledger.postings``, the rules of ``post_payment_events``) with the segment and policy
    versions observed by its ``policy_observed_at``; the merchant's rejected rows up to the same
    watermark. The events, snapshots, posting rules and rejects are read from the latest committed
    version of their tables' files (``formats.TableFormat.read_current``), found beside the view
    (``warehouse.folder_beside``): canonical events and snapshots only grow, and the watermark and
    observation time bound them to what the build knew. Raises as ``published_balance`` does, and
    ``ValueError`` for a ``by`` other than event or day.
    """
    from payledger import postings as fold

    if by not in ("event", "day"):
        raise ValueError(f"by must be event or day, got {by!r}")
    publication, balance_rows = _published_rows(warehouse, table_format, merchant_id, currency, as_of, build, now)
    chosen = balance_rows.build

    def rows(relation: str, columns: tuple[str, ...], merchant: bool = True) -> list[dict[str, Any]]:
        where = ("merchant_id", merchant_id) if merchant else None
        read = read_table_current(table_format, folder_beside(publication.location, relation), columns, where)
        return [{column: _naive_utc(value) for column, value in row.items()} for row in read.to_pylist()]

    watermark = chosen.events_watermark
    events = [
        row
        for row in rows(CANONICAL, ("event_id", "event_type", "amount", "currency", "event_date", "event_time", "ingest_seq", "is_accepted"))
        if row["is_accepted"] and row["currency"] == currency and row["ingest_seq"] <= watermark
    ]
    # The models int_merchant_segment_versions and int_reserve_policy_versions: the snapshots'
    # dbt_valid_from is when a version was observed.
    segments = [
        {**row, "observed_at": row.pop("dbt_valid_from")} for row in rows(SEGMENT_SNAPSHOT, ("segment", "segment_effective_from_date", "dbt_valid_from"))
    ]
    policies = [
        {**row, "observed_at": row.pop("dbt_valid_from")}
        for row in rows(POLICY_SNAPSHOT, ("segment", "reserve_pct", "effective_from_date", "dbt_valid_from"), merchant=False)
    ]
    rules = {row.pop("event_type"): row for row in rows(EVENT_TYPES, ("event_type", *fold.RULE_COLUMNS), merchant=False)}
    observed_until = None if chosen.policy_observed_at is None else _naive_utc(chosen.policy_observed_at)
    posted = fold.post_events(events, segments, policies, rules, observed_until)
    postings = fold.by_day(posted) if by == "day" else [{column: posting[column] for column in fold.EVENT_COLUMNS} for posting in posted]
    rejects = sorted(
        (row for row in rows(REJECTS, REJECT_COLUMNS) if row["ingest_seq"] <= watermark),
        key=lambda row: row["ingest_seq"],
    )
    return Explanation(chosen, merchant_id, currency, by, postings, balance_rows.rows[0], rejects)
