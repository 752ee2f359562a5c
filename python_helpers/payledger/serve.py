"""``payledger serve``: the published balances over HTTP, without Spark or the metastore.

The server reads only published versions of the view (``payledger.publish``): on start and
whenever the publication document changes, it reads the published version's rows from the table's
files and builds an in-memory index (merchant_id -> that merchant's rows, amounts as decimal
strings); then it swaps one reference to (document, index). A request takes that reference once, so
a response never mixes two versions. ``as_of_build`` reads a kept publication (the document's
``previous``) the same way, cached.

Errors are JSON problem details (RFC 9457, ``application/problem+json``): 404 unknown merchant or
build, 422 malformed merchant id, currency or build id, 410 a build whose version retention removed,
503 before anything is published, 401 a missing or unknown API key.

Access (``payledger.apikeys``): without a key file the server listens on loopback only and asks for
no key. With one, every ``/v1`` request needs ``Authorization: Bearer <key>``, and a key that may
not read a merchant gets the same 404 as an unknown merchant, so merchant ids do not leak.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import gc
import ipaddress
import json
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from payledger.apikeys import ApiKey, ApiKeys
from payledger.currencies import format_amount, format_amounts
from payledger.history import BUILD_PATTERN, CURRENCY_PATTERN, MERCHANT_PATTERN
from payledger.publish import Publication, PublicationDocument, PublicationError, iso_utc, publication_path, read_document, read_published_view, source_position

#: Seconds between two looks at the publication document.
WATCH_INTERVAL_S = 0.5
#: Rows of a new version put into the index between two yields of Python's lock (BalanceIndex.load).
INDEX_CHUNK = 2_000
#: Indexes of earlier publications (``as_of_build``) kept in memory.
CACHED_BUILDS = 3
#: Seconds a reading of the landing table's newest position serves ``/v1/health``.
SOURCE_POSITION_TTL_S = 2.0


def keep_out_of_collections() -> None:
    """Move every object alive now (the modules, an index just loaded) out of reach of Python's
    cyclic garbage collector (``gc.freeze``), after a young collection (0.1 ms) frees the recent
    cycles. A full collection walks every tracked object holding Python's lock: 39-47 ms in a
    process with one 81,647-key index and the server's libraries, while requests waited (slices
    of 15.9-50.8 ms p99 in ``make bench-serve`` on Delta at 30M); after a freeze, 0.01 ms.
    Frozen objects are still freed by reference counting: an index holds no reference cycles, so a
    replaced one is freed as before (``gc.collect`` then took 1.6 ms)."""
    gc.collect(1)
    gc.freeze()


class Problem(Exception):
    """An HTTP error answered as problem details: ``status``, ``title``, ``detail``."""

    def __init__(self, status: int, title: str, detail: str) -> None:
        super().__init__(detail)
        self.status, self.title, self.detail = status, title, detail


@dataclass(frozen=True)
class BalanceIndex:
    """One published version in memory: ``by_merchant[merchant_id]`` is the tuple of that merchant's
    entries (one per currency, sorted by currency), each ``(currency, entry)`` with the entry
    already encoded as a JSON object (amounts as decimal strings in the currency's major unit with
    its minor unit of decimals, ``currencies.format_amount``: ``100`` JPY, ``12.50`` USD; times as
    ISO 8601 UTC), so that a request only joins bytes."""

    publication: Publication
    by_merchant: dict[str, tuple[tuple[str, bytes], ...]]

    @classmethod
    def load(cls, publication: Publication) -> BalanceIndex:
        """Read ``publication``'s rows (``read_published_view``); ``PublicationError`` when they
        cannot be read. The entries are encoded and sorted with Arrow's kernels, which release
        Python's lock; the dict is then filled INDEX_CHUNK rows at a time, yielding the lock
        between chunks, so that a server answering requests never waits for more than a chunk
        (one whole-table conversion held it for 30-35 ms at 75,000 keys)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        rows = read_published_view(publication)
        # Text as plain strings: deltalake's engine returns string views, which Arrow's sort and
        # take do not accept, and the encoder joins text with string literals.
        text = (pa.types.is_string_view, pa.types.is_large_string)
        rows = rows.cast(pa.schema([(f.name, pa.string() if any(kind(f.type) for kind in text) else f.type) for f in rows.schema]))
        rows = rows.take(pc.sort_indices(rows, sort_keys=[("merchant_id", "ascending"), ("currency", "ascending")]))
        entries = _encoded_entries(rows, publication)
        if entries is None:  # a currency JSON would need escaped: encode row by row
            encode = json.JSONEncoder(separators=(",", ":")).encode
            entries = pa.array([encode(_entry(row, publication)).encode() for row in rows.to_pylist()], pa.binary())
        merchants, currencies = rows.column("merchant_id"), rows.column("currency")
        by_merchant: dict[str, tuple[tuple[str, bytes], ...]] = {}
        current: str | None = None
        group: list[tuple[str, bytes]] = []
        for start in range(0, len(rows), INDEX_CHUNK):
            chunk = zip(
                merchants.slice(start, INDEX_CHUNK).to_pylist(),
                currencies.slice(start, INDEX_CHUNK).to_pylist(),
                entries.slice(start, INDEX_CHUNK).to_pylist(),
                strict=True,
            )
            for merchant_id, currency, entry in chunk:
                if merchant_id != current:
                    if current is not None:
                        by_merchant[current] = tuple(group)
                    current, group = merchant_id, []
                group.append((sys.intern(currency), entry))
            time.sleep(0)  # yield Python's lock to the event loop (requests) between chunks
        if current is not None:
            by_merchant[current] = tuple(group)
        return cls(publication, by_merchant)

    def body(self, merchant_id: str, currency: str | None = None) -> bytes | None:
        """The JSON response for ``merchant_id`` (only ``currency`` when given), or None when the
        version holds no such balance."""
        entries = self.by_merchant.get(merchant_id, ())
        if currency is not None:
            entries = tuple(entry for entry in entries if entry[0] == currency)
        if not entries:
            return None
        return b'{"merchant_id":' + json.dumps(merchant_id).encode() + b',"balances":[' + b",".join(entry for _, entry in entries) + b"]}"


def _encoded_entries(rows, publication: Publication):
    """Each row of ``rows`` (a ``pyarrow.Table`` of ``publish.VIEW_COLUMNS``, text as ``string``:
    ``BalanceIndex.load`` casts other text types) as its JSON entry, in
    a ``pyarrow`` binary array in the rows' order: the fields of ``_entry`` in its order, built with
    Arrow's compute kernels (which release Python's lock, so that requests go on while a new
    version loads). Times carry microseconds always. None when a currency is not three capital
    letters (its JSON might need escaping)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    currency = rows.column("currency")
    if currency.null_count or not pc.all(pc.match_substring_regex(currency, f"^{CURRENCY_PATTERN.pattern}$")).as_py():
        return None

    def quoted(array):
        return pc.binary_join_element_wise('"', array, '"', "")

    def text(array):
        return pc.fill_null(quoted(pc.cast(array, pa.string())), "null")

    def time(array):
        utc = pc.cast(array, pa.timestamp(array.type.unit, tz="UTC"))
        return pc.fill_null(pc.binary_join_element_wise('"', pc.strftime(utc, format="%Y-%m-%dT%H:%M:%S"), '+00:00"', ""), "null")

    parts = [
        '{"currency":',
        quoted(currency),
        ',"available":',
        text(format_amounts(rows.column("available_balance"), currency)),
        ',"pending":',
        text(format_amounts(rows.column("pending_balance"), currency)),
        ',"reserve_hold":',
        text(format_amounts(rows.column("reserve_hold"), currency)),
        ',"last_event_time":',
        time(rows.column("last_event_time")),
        ',"source_watermark":',
        pc.fill_null(pc.cast(rows.column("source_watermark"), pa.string()), "null"),
        ',"policy_observed_at":',
        time(rows.column("policy_observed_at")),
        f',"published_version":{json.dumps(publication.version)},"published_by_build":{json.dumps(publication.invocation_id)}}}',
    ]
    return pc.cast(pc.binary_join_element_wise(*parts, ""), pa.binary())


def _entry(row: dict[str, Any], publication: Publication) -> dict[str, Any]:
    return {
        "currency": row["currency"],
        "available": format_amount(row["available_balance"], row["currency"]),
        "pending": format_amount(row["pending_balance"], row["currency"]),
        "reserve_hold": format_amount(row["reserve_hold"], row["currency"]),
        "last_event_time": iso_utc(row["last_event_time"]),
        "source_watermark": row["source_watermark"],
        "policy_observed_at": iso_utc(row["policy_observed_at"]),
        "published_version": publication.version,
        "published_by_build": publication.invocation_id,
    }


class PublishedBalances:
    """The balances of one warehouse's published versions, kept current by ``refresh()``.

    ``state`` is one tuple (the publication document, the current version's index or None), replaced
    whole; readers take it once per request. ``freeze``: after each index it loads, take the
    process's objects out of the garbage collector's reach (``keep_out_of_collections``); for a
    server process, not for one that hosts other work (a test run)."""

    def __init__(self, warehouse: Path, table_format: str, freeze: bool = False) -> None:
        self.warehouse, self.table_format, self.freeze = Path(warehouse), table_format, freeze
        self.state: tuple[PublicationDocument, BalanceIndex | None] = (PublicationDocument(), None)
        self._seen: tuple[int, int, int] | None = None
        self._earlier: OrderedDict[str, BalanceIndex] = OrderedDict()
        self._lock = threading.Lock()
        self._source: tuple[float, str | None, int | None] = (0.0, None, None)

    def refresh(self) -> bool:
        """Read the publication document if it changed (by inode, size and mtime: it is replaced by
        rename) and swap in the new version's index. Returns whether the served version changed.
        Raises ``PublicationError`` when the document or its version cannot be read; the served
        state is then unchanged."""
        try:
            stat = publication_path(self.warehouse, self.table_format).stat()
            seen = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
        except FileNotFoundError:
            seen = None
        if seen == self._seen and seen is not None:
            return False
        document = read_document(self.warehouse, self.table_format)
        index = self.state[1]
        changed = document.current != (index.publication if index else None)
        if changed:
            index = BalanceIndex.load(document.current) if document.current else None
            self.after_load()
        self.state, self._seen = (document, index), seen
        return changed

    def after_load(self) -> None:
        """What follows loading an index (or the server's start): ``keep_out_of_collections``
        when ``freeze``."""
        if self.freeze:
            keep_out_of_collections()

    def index_of_build(self, document: PublicationDocument, build: str) -> BalanceIndex:
        """The index of the publication ``build`` made, among those ``document`` keeps. ``Problem``
        404 when it keeps none of that build, 410 when the version can no longer be read."""
        current = self.state[1]
        if current is not None and current.publication.invocation_id == build:
            return current
        publication = next((p for p in [document.current, *document.previous] if p and p.invocation_id == build), None)
        if publication is None:
            kept = ", ".join(p.invocation_id for p in [document.current, *document.previous] if p)
            raise Problem(404, "Unknown build", f"build {build} published no version that is kept; kept: {kept or 'none'}")
        with self._lock:
            if build in self._earlier:
                self._earlier.move_to_end(build)
                return self._earlier[build]
        try:
            index = BalanceIndex.load(publication)
        except PublicationError as error:
            raise Problem(410, "Build past retention", f"the version build {build} published can no longer be read: {error}") from error
        self.after_load()
        with self._lock:
            self._earlier[build] = index
            while len(self._earlier) > CACHED_BUILDS:
                self._earlier.popitem(last=False)
        return index

    def balances(self, merchant_id: str, currency: str | None = None, as_of_build: str | None = None, key: ApiKey | None = None) -> bytes:
        """The JSON body of ``GET /v1/merchants/{merchant_id}/balances``; ``Problem`` on errors. With
        ``key``, a merchant the key may not read is answered exactly as an unknown one."""
        if not MERCHANT_PATTERN.fullmatch(merchant_id):
            raise Problem(422, "Malformed merchant id", f"merchant id must match {MERCHANT_PATTERN.pattern}")
        if currency is not None and not CURRENCY_PATTERN.fullmatch(currency):
            raise Problem(422, "Malformed currency", "currency must be an ISO 4217 code in capitals, e.g. USD")
        if as_of_build is not None and not BUILD_PATTERN.fullmatch(as_of_build):
            raise Problem(422, "Malformed build id", "as_of_build must be a dbt invocation id (a UUID)")
        document, index = self.state
        if index is None:
            raise Problem(503, "Nothing published", "no build has published a version of the view yet")
        if as_of_build is not None:
            index = self.index_of_build(document, as_of_build)
        body = index.body(merchant_id, currency) if key is None or key.may_read(merchant_id) else None
        if body is None:
            raise Problem(404, "Unknown merchant", f"no published balance for merchant {merchant_id}" + (f" in {currency}" if currency else ""))
        return body

    def source_position(self, publication: Publication | None) -> int | None:
        """The landing table's newest source position (``publish.source_position``), read at most
        every ``SOURCE_POSITION_TTL_S`` seconds; None when unknown or unreadable."""
        location = publication.source_location if publication else None
        read_at, seen_location, position = self._source
        if location is None:
            return None
        if location != seen_location or time.monotonic() - read_at > SOURCE_POSITION_TTL_S:
            try:
                position = source_position(self.table_format, location)
            except Exception:  # deltalake and pyiceberg raise their own types; health reports "unknown"
                position = None
            self._source = (time.monotonic(), location, position)
        return position

    def health(self, now: dt.datetime | None = None) -> dict[str, Any]:
        """The response of ``GET /v1/health``: the published version, its build and age, its source
        watermark and how far the landed events are ahead of it (``source_lag``: source positions
        landed but not yet classified in the published version), and whether a build failed after
        it (``last_failed_build``)."""
        document, index = self.state
        now = now or dt.datetime.now(dt.UTC)
        current = index.publication if index else None
        position = self.source_position(current)
        classified = None if current is None else current.events_watermark if current.events_watermark is not None else current.source_watermark
        return {
            "status": "ok" if current and not document.failed_since_published() else "degraded" if current else "unpublished",
            "table_format": self.table_format,
            "published_version": current.version if current else None,
            "published_by_build": current.invocation_id if current else None,
            "published_at": current.published_at if current else None,
            "age_s": round((now - dt.datetime.fromisoformat(current.published_at)).total_seconds(), 3) if current else None,
            "source_watermark": current.source_watermark if current else None,
            "events_watermark": current.events_watermark if current else None,
            "source_position": position,
            "source_lag": None if position is None or classified is None else max(position - classified, 0),
            "newer_build_failed": document.failed_since_published(),
            "last_failed_build": document.last_failed_build,
            "merchants": len(index.by_merchant) if index else 0,
        }


def _response_models():
    """The response's shape for OpenAPI (``/docs``); responses are encoded ahead, not validated."""
    from pydantic import BaseModel

    class Balance(BaseModel):
        currency: str
        available: str
        pending: str
        reserve_hold: str
        last_event_time: str | None
        source_watermark: int | None
        policy_observed_at: str | None
        published_version: int
        published_by_build: str

    class MerchantBalances(BaseModel):
        merchant_id: str
        balances: list[Balance]

    return MerchantBalances


def create_app(balances: PublishedBalances, watch_interval_s: float = WATCH_INTERVAL_S, keys: ApiKeys | None = None):
    """The ASGI application (FastAPI) over ``balances``; it refreshes them every
    ``watch_interval_s`` seconds while it runs (a failed refresh keeps the served version). With
    ``keys`` (at least one), every ``/v1`` request needs one of them as a bearer token."""
    from fastapi import Depends, FastAPI, Query, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse, Response
    from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

    MerchantBalances = _response_models()
    bearer = HTTPBearer(auto_error=False, description="An API key from the server's key file (payledger api-key add).")

    # The balance read and the key check are a few dictionary lookups: they run on the event loop
    # (async), not in FastAPI's thread pool, which would cost each request two hand-offs between
    # threads. What reads files (a past build's version, health's source position) stays off it.
    async def caller(credentials: HTTPAuthorizationCredentials | None = Depends(bearer)) -> ApiKey | None:
        if not keys:
            return None
        key = keys.authenticate(credentials.credentials if credentials else None)
        if key is None:
            raise Problem(401, "Unauthorized", "send a valid API key as Authorization: Bearer <key>")
        return key

    @contextlib.asynccontextmanager
    async def lifespan(_app) -> AsyncIterator[None]:
        with contextlib.suppress(PublicationError):
            await asyncio.to_thread(balances.refresh)
        # Health's first source position imports its reader (pyiceberg: 0.42 s, holding Python's
        # lock for up to 20 ms at a time; 14 ms warm): pay it before the first request.
        await asyncio.to_thread(balances.health)
        balances.after_load()

        async def watch() -> None:
            while True:
                await asyncio.sleep(watch_interval_s)
                with contextlib.suppress(PublicationError):
                    await asyncio.to_thread(balances.refresh)

        task = asyncio.create_task(watch())
        yield
        task.cancel()

    app = FastAPI(title="PayLedger balances", version="1", lifespan=lifespan, description=__doc__)

    def problem(status: int, title: str, detail: str) -> JSONResponse:
        body = {"type": "about:blank", "title": title, "status": status, "detail": detail}
        return JSONResponse(body, status_code=status, media_type="application/problem+json")

    @app.exception_handler(Problem)
    async def on_problem(_request: Request, error: Problem) -> JSONResponse:
        response = problem(error.status, error.title, error.detail)
        if error.status == 401:
            response.headers["WWW-Authenticate"] = "Bearer"
        return response

    @app.exception_handler(RequestValidationError)
    async def on_invalid(_request: Request, error: RequestValidationError) -> JSONResponse:
        return problem(422, "Malformed request", "; ".join(str(e.get("msg")) for e in error.errors()))

    @app.get("/v1/merchants/{merchant_id}/balances", response_model=MerchantBalances)
    async def merchant_balances(
        merchant_id: str, currency: str | None = Query(None), as_of_build: str | None = Query(None), key: ApiKey | None = Depends(caller)
    ) -> Response:
        """One entry per currency of the merchant's balances in the published version (or the
        version ``as_of_build`` published): decimal strings in the currency's major unit, with its minor unit of decimals (100 JPY, 1.235 KWD, 12.50 USD)."""
        if as_of_build is None:
            body = balances.balances(merchant_id, currency, None, key)
        else:
            body = await asyncio.to_thread(balances.balances, merchant_id, currency, as_of_build, key)
        return Response(body, media_type="application/json")

    @app.get("/v1/health", dependencies=[Depends(caller)])
    def health() -> dict[str, Any]:
        """The published version, its build and age, and whether a newer build failed."""
        return balances.health()

    return app


def check_host(host: str, keys: ApiKeys | None = None) -> None:
    """Refuse (``ValueError``) to listen on anything but a loopback address unless API ``keys``
    are configured (at least one)."""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback and not keys:
        raise ValueError(f"refusing to listen on {host} without API keys (--api-keys): without them the balance API serves loopback (127.0.0.1) only")


def access_log_off_the_loop():
    """Configure logging as uvicorn's defaults do (``uvicorn.config.LOGGING_CONFIG``: its log on
    stderr, one access line per request on stdout), except that access lines are written by a
    thread: the event loop formats each line and queues it (``logging.handlers.QueueHandler``), and
    a ``QueueListener`` writes it. A write to a log file can wait (ext4 waits for its journal while
    the disk is busy, for example with a build's scans), and requests would wait with it. Returns
    the started listener; ``stop()`` writes what is queued."""
    import copy
    import logging.config
    import logging.handlers
    import queue

    from uvicorn.config import LOGGING_CONFIG

    logging.config.dictConfig(copy.deepcopy(LOGGING_CONFIG))
    access = logging.getLogger("uvicorn.access")
    (writer,) = access.handlers
    lines: queue.SimpleQueue = queue.SimpleQueue()
    queued = logging.handlers.QueueHandler(lines)
    # QueueHandler hands the listener the formatted line (its record's args are dropped).
    queued.setFormatter(writer.formatter)
    writer.setFormatter(logging.Formatter("%(message)s"))
    access.handlers = [queued]
    listener = logging.handlers.QueueListener(lines, writer)
    listener.start()
    return listener


def serve(warehouse: Path, table_format: str, host: str = "127.0.0.1", port: int = 8000, keys: ApiKeys | None = None) -> None:
    """Run the API with uvicorn until interrupted, its access log written off the event loop
    (``access_log_off_the_loop``). ``ValueError`` for a non-loopback ``host`` without ``keys``."""
    import uvicorn

    check_host(host, keys)
    listener = access_log_off_the_loop()
    try:
        app = create_app(PublishedBalances(warehouse, table_format, freeze=True), keys=keys)
        uvicorn.run(app, host=host, port=port, log_level="info", log_config=None)
    finally:
        listener.stop()
