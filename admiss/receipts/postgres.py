"""The PostgreSQL receipt store: the rows of :mod:`admiss.receipts.store` in one database
that any number of gateways (a fleet behind a load balancer) write to at once.

The only module that imports psycopg (3) and psycopg_pool (the ``postgres`` extra).

- The schema has a version (table ``admiss_schema``). Opening a store to write takes a
  transaction-scoped advisory lock, then creates or migrates the tables and commits: two
  gateways starting together cannot race (the second waits, then finds the work done). A
  store of a newer version is refused, never written.
- :class:`PostgresWriter` commits receipts from the event loop in group commits: the first
  receipt starts a transaction at once; those that come while it is in flight go into the
  next, so under load one commit carries many receipts. It commits without waiting for the
  WAL flush, and sends a batch again after a reconnection until the server says it is
  flushed, so a server crash loses none (the class says how). Its statements are prepared
  on its connection and run through psycopg's libpq layer (``_run_prepared`` says why).
- The URL is shown with its password masked in every message (``where``), and every error
  psycopg gives is masked the same way before it is shown.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import math
import threading
from typing import Any, Callable, Iterator

import psycopg
import psycopg_pool
from psycopg import pq

from admiss.jsonio import dumps_line
from admiss.receipts.store import (RECEIPT_COLUMNS, DamagedRow, GateKey, StoreError, Stored, call_rows, receipt_of,
                                   receipt_row, receipts_of, settle, unforeseen)
from admiss.redact import redact, url_secrets

SCHEMA_VERSION = 1
# pg_advisory_xact_lock's key for migrations: any fixed number; this one is "admiss" in ASCII.
MIGRATION_LOCK = 0x61646D697373
# Each version's statements, applied in order to a database at an older version.
MIGRATIONS = {
    1: [
        """CREATE TABLE receipts (
             id text PRIMARY KEY,
             created_at text NOT NULL,
             chain text NOT NULL,
             served_rung text,
             outcome text NOT NULL,
             model_cost_usd double precision NOT NULL,
             gate_cost_usd double precision NOT NULL,
             body text NOT NULL,
             seq bigint GENERATED ALWAYS AS IDENTITY)""",
        "CREATE INDEX receipts_created_at ON receipts (created_at, seq)",
        "CREATE TABLE served_tool_calls (key text PRIMARY KEY, receipt_id text NOT NULL)",
        """CREATE TABLE disabled_gates (
             chain text NOT NULL, rung text NOT NULL, position integer NOT NULL, gate text NOT NULL,
             reason text NOT NULL, PRIMARY KEY (chain, rung, position, gate))""",
    ],
}

# A batch of receipts and their tool calls in one statement, so in one round trip and one
# transaction (a statement's data-modifying WITH runs to completion whether read or not).
# The batch comes as one JSON text made by orjson, which the server parses in C: profiled
# with py-spy at concurrency 50, psycopg's dumping of one text array per column (a Python
# loop escaping every value with a regex) took 15% of the gateway's CPU samples, and against
# the instant upstream the gateway ran at 0.54x SQLite's throughput with it, 0.72x with the
# JSON text (benchmarks/bench_gateway.py, run_postgres). The statement answers where the
# server's WAL was inserted and flushed to when it ran (PostgresWriter's held receipts).
_COLUMN_TYPES = ("text", "text", "text", "text", "text", "float8", "float8", "text")
_COLUMNS = ", ".join(RECEIPT_COLUMNS)
_WAL_POSITIONS = "SELECT (pg_current_wal_insert_lsn() - '0/0')::int8, (pg_current_wal_flush_lsn() - '0/0')::int8"
_INSERT_CALLS = "INSERT INTO served_tool_calls {calls} ON CONFLICT DO NOTHING"


def _insert(on_conflict: str, receipts: str, calls: str) -> str:
    """The statement of a batch given as two JSON texts (placeholders ``receipts``, ``calls``)."""
    typed = ", ".join(f"{name} {kind}" for name, kind in zip(RECEIPT_COLUMNS, _COLUMN_TYPES))
    calls_of = f"SELECT * FROM json_to_recordset({calls}::json) AS c(key text, receipt_id text)"
    return f"""WITH stored AS (
  INSERT INTO receipts ({_COLUMNS})
  SELECT {_COLUMNS} FROM json_to_recordset({receipts}::json) AS r({typed}) {on_conflict}),
calls AS ({_INSERT_CALLS.format(calls=calls_of)})
{_WAL_POSITIONS}"""


_INSERT = _insert("", "%s", "%s")
# One receipt, its columns as parameters $1-$8 and its tool calls' keys as a JSON array in
# $9: the writer's commit when receipts come one at a time (most of them, up to hundreds a
# second). The server parses no JSON for the receipt: measured one receipt at a time
# (benchmarks/bench_receipt_commit.py), its backend's CPU per commit was 55 us against 94 us
# for the same receipt through the batch's json_to_recordset.
_INSERT_ONE = f"""WITH stored AS (
  INSERT INTO receipts ({_COLUMNS})
  VALUES ({", ".join(f"${n}::{kind}" for n, kind in enumerate(_COLUMN_TYPES, 1))})),
calls AS ({_INSERT_CALLS.format(calls="SELECT key, $1::text FROM json_array_elements_text($9::json) AS key")})
{_WAL_POSITIONS}"""
# The writer's statements, prepared by name on each of its connections: (name, text).
_WRITER_STATEMENTS = {
    "one": ("admiss_insert_one", _INSERT_ONE),
    "batch": ("admiss_insert_batch", _insert("", "$1", "$2")),
    # Receipts sent again after a reconnection: those already there are left as they are.
    "again": ("admiss_insert_again", _insert("ON CONFLICT DO NOTHING", "$1", "$2")),
}
_INSERT_GATE = "INSERT INTO disabled_gates VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING"
# How long opening waits for the server, and a request for a connection of the pool: a
# database that is down answers the requests 503 after this, rather than holding them.
CONNECT_TIMEOUT_S = 2
# How long one commit may take before its requests get the store's error (a server that
# stopped answering without closing the connection).
COMMIT_TIMEOUT_S = 10.0


class PostgresStore:
    """A store in one PostgreSQL database, read and written through a pool of connections
    (safe to share between threads, unlike one connection)."""

    def __init__(self, url: str, read_only: bool = False):
        self._url = url
        # A reader's sessions refuse every write (the server enforces it).
        self._options = {"options": "-c default_transaction_read_only=on"} if read_only else {}
        self._secrets = url_secrets([url])
        self.where = redact(url, self._secrets)
        self._pool: psycopg_pool.ConnectionPool | None = None
        self._pool_lock = threading.Lock()

    def url(self) -> str:
        """The URL as given, password and all: for connecting, never for a message."""
        return self._url

    def masked(self, exc: BaseException) -> str:
        """An error's text with the URL's password masked."""
        return redact(str(exc).strip(), self._secrets)

    def error(self, doing: str, exc: BaseException) -> StoreError:
        if isinstance(exc, psycopg_pool.PoolTimeout):
            return StoreError(f"{self.where}: cannot {doing}: no connection to the database within {CONNECT_TIMEOUT_S}s")
        return StoreError(f"{self.where}: cannot {doing}: {self.masked(exc)}")

    def connect(self) -> psycopg.Connection:
        try:
            return psycopg.connect(self._url, connect_timeout=CONNECT_TIMEOUT_S, **self._options)
        except psycopg.Error as exc:
            raise self.error("connect", exc) from None

    def pool(self) -> psycopg_pool.ConnectionPool:
        with self._pool_lock:
            if self._pool is None:
                self._pool = psycopg_pool.ConnectionPool(
                    self._url, min_size=1, max_size=4, timeout=CONNECT_TIMEOUT_S, open=True,
                    check=psycopg_pool.ConnectionPool.check_connection,
                    kwargs={"connect_timeout": CONNECT_TIMEOUT_S, **self._options})
            return self._pool

    @contextlib.contextmanager
    def _pooled(self) -> Iterator[psycopg.Connection]:
        """A connection of the pool. When the database is unreachable the pool is dropped,
        and the next call makes a new one, which connects at once: psycopg_pool's own
        reconnection backs off (1 s, 2 s, 4 s, ...), so after a restart of a few seconds
        its reads (``/readyz``, ``GET /v1/receipts/{id}``) kept failing for seconds more."""
        pool = self.pool()
        try:
            with pool.connection() as conn:
                yield conn
        except (psycopg.OperationalError, psycopg_pool.PoolTimeout):
            with self._pool_lock:
                if self._pool is pool:
                    self._pool = None
            pool.close(timeout=0)
            raise

    def put(self, receipt: dict[str, Any]) -> None:
        self.put_many([receipt])

    def put_many(self, receipts: list[dict[str, Any]]) -> None:
        try:
            with self._pooled() as conn:
                conn.execute(_INSERT, [text.decode() for text in _batch([receipt_row(r) for r in receipts])])
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise self.error("write receipts", exc) from None

    def _fetch(self, query: str, params: tuple, doing: str = "read receipts") -> list[tuple]:
        try:
            with self._pooled() as conn:
                return conn.execute(query, params).fetchall()
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise self.error(doing, exc) from None

    def get(self, receipt_id: str) -> dict[str, Any] | None:
        rows = self._fetch("SELECT body FROM receipts WHERE id = %s", (receipt_id,))
        return receipt_of(self.where, receipt_id, rows[0][0]) if rows else None

    def served(self, keys: list[str]) -> set[str]:
        rows = self._fetch("SELECT key FROM served_tool_calls WHERE key = ANY(%s)", (keys,))
        return {key for key, in rows}

    def iter_since(self, since: str | None = None,
                   skip: Callable[[DamagedRow], None] | None = None) -> Iterator[dict[str, Any]]:
        query = "SELECT id, body FROM receipts WHERE created_at >= %s ORDER BY created_at, seq"
        try:
            with self._pooled() as conn, conn.transaction():
                # A named (server-side) cursor streams the rows: a store of millions of
                # receipts is read in pieces, not all at once into memory.
                with conn.cursor(name="admiss_receipts") as cursor:
                    cursor.itersize = 2000
                    cursor.execute(query, (since or "",))
                    yield from receipts_of(self.where, cursor, skip)
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise self.error("read receipts", exc) from None

    def counts(self) -> dict[tuple[str, str], int]:
        rows = self._fetch("SELECT chain, outcome, COUNT(*) FROM receipts GROUP BY chain, outcome", ())
        return {(chain, outcome): count for chain, outcome, count in rows}

    def writable(self) -> bool:
        """Whether the database answers and takes writes (a primary, not a read-only standby)."""
        try:
            with self._pooled() as conn:
                return conn.execute("SELECT NOT pg_is_in_recovery() AND current_setting('transaction_read_only') = 'off'"
                                    ).fetchone()[0]
        except (psycopg.Error, psycopg_pool.PoolTimeout):
            return False

    def sync_gates(self, disabled: dict[GateKey, str]) -> dict[GateKey, str]:
        try:
            with self._pooled() as conn, conn.transaction():
                if disabled:
                    conn.cursor().executemany(_INSERT_GATE, [(*key, reason) for key, reason in disabled.items()])
                rows = conn.execute("SELECT chain, rung, position, gate, reason FROM disabled_gates").fetchall()
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise self.error("share error budgets", exc) from None
        return {(chain, rung, position, gate): reason for chain, rung, position, gate, reason in rows}

    def enable_gates(self, chain: str | None = None) -> int:
        try:
            with self._pooled() as conn, conn.transaction():
                return conn.execute("DELETE FROM disabled_gates WHERE %s::text IS NULL OR chain = %s",
                                    (chain, chain)).rowcount
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise self.error("write", exc) from None

    def close(self) -> None:
        with self._pool_lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None


def open_store(url: str, create: bool = True, read_only: bool = False) -> PostgresStore:
    """The store in the database at ``url``: its tables made or migrated first when
    ``create``; else StoreError unless they are there at this version. ``read_only``:
    every session refuses writes."""
    store = PostgresStore(url, read_only and not create)
    with store.connect() as conn:
        try:
            if create:
                _migrate(conn, store)
            else:
                _check_version(conn, store, _version(conn))
            _check_columns(conn, store)
        except psycopg.Error as exc:
            raise store.error("open the receipt store", exc) from None
    return store


def _version(conn: psycopg.Connection) -> int:
    """The schema version of the database (0: no admiss tables)."""
    if conn.execute("SELECT to_regclass('admiss_schema')").fetchone()[0] is None:
        return 0
    return conn.execute("SELECT coalesce(max(version), 0) FROM admiss_schema").fetchone()[0]


def _migrate(conn: psycopg.Connection, store: PostgresStore) -> None:
    with conn.transaction():
        # Held until this transaction ends: a second gateway opening the store meanwhile
        # waits here, then reads the version this one committed.
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute("CREATE TABLE IF NOT EXISTS admiss_schema (version integer NOT NULL)")
        version = _version(conn)
        if version > SCHEMA_VERSION:
            raise _newer(store, version)
        for number in range(version + 1, SCHEMA_VERSION + 1):
            for statement in MIGRATIONS[number]:
                conn.execute(statement)
            conn.execute("INSERT INTO admiss_schema VALUES (%s)", (number,))


def _check_version(conn: psycopg.Connection, store: PostgresStore, version: int) -> None:
    if version == 0:
        raise StoreError(f"{store.where}: not a receipt store (no admiss_schema table; admiss serve makes one)")
    if version > SCHEMA_VERSION:
        raise _newer(store, version)
    if version < SCHEMA_VERSION:
        raise StoreError(f"{store.where}: the receipt store is at schema version {version}, this admiss reads "
                         f"{SCHEMA_VERSION}: start admiss serve on it once to migrate it")


def _newer(store: PostgresStore, version: int) -> StoreError:
    return StoreError(f"{store.where}: the receipt store is at schema version {version}, newer than this admiss "
                      f"knows ({SCHEMA_VERSION}): upgrade admiss")


def _check_columns(conn: psycopg.Connection, store: PostgresStore) -> None:
    columns = [name for name, in conn.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
        "AND table_name = 'receipts' ORDER BY ordinal_position")]
    if tuple(columns[:len(RECEIPT_COLUMNS)]) != RECEIPT_COLUMNS:
        raise StoreError(f"{store.where}: not a receipt store (no receipts table of the admiss schema)")


class PostgresWriter:
    """Writes receipts from the event loop in group commits on one async connection of its
    own, and reads through the store's pool in worker threads.

    ``await writer.put(receipt)`` returns once the receipt's transaction is committed, so a
    response sent after it always has its receipt. A commit that fails (the database is
    down, restarting, or unreachable for CONNECT_TIMEOUT_S) fails the requests of its
    transaction with StoreError, and the gateway answers them 503.

    Each batch is one statement on an autocommit connection: one round trip, one
    transaction. Why one connection and not the pool: commits go one at a time (that is
    what groups them), so a pool would hold one busy connection anyway, and it costs more. Its check of
    a connection before each use is one more round trip per commit, and after a database
    restart its reconnection backs off (1 s, 2 s, 4 s, ...): measured with the database down
    for 2 s under load, replicas on the pool served again 6.2 s after the database was back
    (benchmarks/bench_fleet.py). Here the next commit after a failure connects again at once,
    and a batch that fails on a connection that had sat idle is sent once more on a new one.

    Durability: the writer's session commits with ``synchronous_commit=off`` (unless the
    URL's ``options`` set it), so a commit returns once it is in the server's WAL buffers,
    without waiting for the disk's flush, as the SQLite store's commit returns without an
    fsync. Such a commit is lost if the server crashes before its WAL writer flushes it
    (within 3 × ``wal_writer_delay``, 600 ms by default), so the writer holds each batch's
    rows until the server says its WAL is flushed past the batch's commit, and on every new
    connection sends what it holds again first (``ON CONFLICT DO NOTHING``): a server crash
    loses no receipt while the gateway that wrote it runs on. (Each statement answers the WAL
    positions: the insert position when batch k runs lies past batch k-1's commit record, so
    batch k-1 is on disk once the flushed position reaches it.)

    What it holds is bounded: a commit that would take the held receipts past HELD_LIMIT
    waits for the flush instead (``synchronous_commit=on`` for it), which puts every earlier
    commit on disk too, and the writer lets go of them all. A server whose flushes lag (a
    slow or stalled disk) thus slows the commits down, and with no flush within
    COMMIT_TIMEOUT_S its requests get the store's error, rather than the gateway's memory
    growing with every receipt.
    """

    # About 10 s of receipts at 1,000 a second, 10-20 MB of rows; at 500 a second the server
    # flushes every 200 ms (wal_writer_delay), so about 100 are held.
    HELD_LIMIT = 10_000

    def __init__(self, store: PostgresStore):
        self.store = store
        self._pending: list[tuple[tuple, asyncio.Future, Stored]] = []
        self._committer: asyncio.Task | None = None
        self._conn: psycopg.AsyncConnection | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        # Rows committed but maybe not yet flushed: (the WAL position their commit ends
        # before, None until the next statement tells it; the rows), oldest first.
        self._held: collections.deque[tuple[int | None, list[tuple]]] = collections.deque()
        self._held_count = 0  # receipts in _held
        options = _url_options(store.url())
        # Given as a keyword, options replace the URL's: they are kept, with this one after.
        self._session = {} if "synchronous_commit" in options else {
            "options": f"{options} -c synchronous_commit=off".strip()}

    async def put(self, receipt: dict[str, Any]) -> None:
        await self.queue(receipt)

    def queue(self, receipt: dict[str, Any], body: str | None = None, stored: Stored = None) -> asyncio.Future:
        loop = asyncio.get_running_loop()
        self._loop = loop
        done = loop.create_future()
        self._pending.append((receipt_row(receipt, body), done, stored))
        if self._committer is None:
            self._committer = loop.create_task(self._commit_all())
        return done

    async def _commit_all(self) -> None:
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                error = await self._write([row for row, _, _ in batch])
                for _, done, stored in batch:
                    settle(done, error, stored)
        finally:
            self._committer = None

    async def _write(self, rows: list[tuple]) -> StoreError | None:
        try:
            # A deadline for every wait of the commit, rather than asyncio.wait_for, which
            # would wrap each commit in a task of its own.
            await self._commit(rows, asyncio.get_running_loop().time() + COMMIT_TIMEOUT_S)
            return None
        except asyncio.TimeoutError:
            await self._drop()  # in an unknown state: the next commit starts on a new one
            return StoreError(f"{self.store.where}: cannot write receipts: no commit within {COMMIT_TIMEOUT_S:g}s")
        except psycopg.Error as exc:
            if isinstance(exc, psycopg.OperationalError):
                await self._drop()
            return self.store.error("write receipts", exc)
        except Exception as exc:  # noqa: BLE001 - any failure must still answer the batch's requests
            await self._drop()  # the connection's state is unknown
            return unforeseen(self.store.where, exc)

    async def _commit(self, rows: list[tuple], deadline: float) -> None:
        reused = self._conn is not None
        conn = await self._connection(deadline)
        try:
            await self._insert(conn, "one" if len(rows) == 1 else "batch", rows, deadline)
        except psycopg.OperationalError:
            await self._drop()
            if not reused:
                raise
            # A connection that sat idle may have broken meanwhile (the database restarted):
            # send the batch once more on a new one. Safe either way: had the first one been
            # committed after all, its ids make this one fail, and the requests get 503
            # with their receipts stored, never a response without one.
            await self._insert(await self._connection(deadline), "one" if len(rows) == 1 else "batch", rows, deadline)

    async def _insert(self, conn: psycopg.AsyncConnection, statement: str, rows: list[tuple],
                      deadline: float) -> None:
        """Commit ``rows`` with one of _WRITER_STATEMENTS, hold them, and let go of the held
        rows now flushed."""
        params = _one_params(rows[0]) if statement == "one" else list(_batch(rows))
        if self._held_count + len(rows) > self.HELD_LIMIT:
            await self._commit_flushed(conn, statement, params, deadline)
            return
        inserted, flushed = await _run_prepared(conn, _WRITER_STATEMENTS[statement][0], params, deadline)
        held = self._held
        if held and held[-1][0] is None:  # only the last commit's end is not yet known
            held[-1] = (inserted, held[-1][1])
        while held and held[0][0] <= flushed:  # in commit order, so in WAL order
            self._held_count -= len(held.popleft()[1])
        held.append((None, rows))
        self._held_count += len(rows)

    async def _commit_flushed(self, conn: psycopg.AsyncConnection, statement: str, params: list[bytes | None],
                              deadline: float) -> None:
        """Commit and wait for the WAL flush, which puts every held receipt on disk too."""
        loop = asyncio.get_running_loop()
        try:
            await asyncio.wait_for(conn.execute("SET synchronous_commit = on"), deadline - loop.time())
            await _run_prepared(conn, _WRITER_STATEMENTS[statement][0], params, deadline)
            self._held.clear()
            self._held_count = 0
            # Back to the session's own setting (the writer's off, or the URL's options).
            await asyncio.wait_for(conn.execute("RESET synchronous_commit"), deadline - loop.time())
        except BaseException:
            await conn.close()  # its session may be left waiting for flushes: the next commit takes a new one
            raise

    async def _connection(self, deadline: float) -> psycopg.AsyncConnection:
        if self._conn is None or self._conn.closed:
            self._conn = await asyncio.wait_for(self._connect(deadline), deadline - asyncio.get_running_loop().time())
        return self._conn

    async def _connect(self, deadline: float) -> psycopg.AsyncConnection:
        """A new connection, its statements prepared, and what the writer holds sent on it."""
        # autocommit: the one statement of a batch is its transaction, committed by the
        # time its reply comes, with no BEGIN or COMMIT round trip.
        conn = await psycopg.AsyncConnection.connect(self.store.url(), connect_timeout=CONNECT_TIMEOUT_S,
                                                     autocommit=True, client_encoding="UTF8", **self._session)
        try:
            for name, text in _WRITER_STATEMENTS.values():
                await conn.execute(f"PREPARE {name} AS {text}")
        except BaseException:
            await conn.close()
            raise
        held = [row for _, rows in self._held for row in rows]
        self._held.clear()
        self._held_count = 0
        if held:  # the server may have lost them (a crash): they go first, once more
            try:
                await self._insert(conn, "again", held, deadline)
            except BaseException:
                self._held, self._held_count = collections.deque([(None, held)]), len(held)
                await conn.close()
                raise
            logging.getLogger("uvicorn.error").info(
                "receipt store reconnected: sent the %d receipts not yet flushed again", len(held))
        return conn

    async def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close()

    async def aread(self, call: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(None, call, self.store, *args)

    async def _aclose(self) -> None:
        while self._committer is not None:
            await asyncio.shield(self._committer)
        if self._held:
            try:
                await asyncio.wait_for(self._send_held_if_lost(), CONNECT_TIMEOUT_S * 2)
            except (psycopg.Error, asyncio.TimeoutError) as exc:
                logging.getLogger("uvicorn.error").warning(
                    "receipt store: %d receipts not yet flushed could not be checked at close: %s",
                    sum(len(rows) for _, rows in self._held), self.store.masked(exc))
        await self._drop()

    async def _send_held_if_lost(self) -> None:
        """Before closing: if the connection broke (the server restarted since the last
        commit), what the writer holds is sent again on a new one."""
        deadline = asyncio.get_running_loop().time() + CONNECT_TIMEOUT_S * 2
        try:
            await (await self._connection(deadline)).execute("SELECT 1")
        except psycopg.OperationalError:
            await self._drop()
            await self._connection(deadline)

    def close(self) -> None:
        """Commit what is queued and close the connections (from any thread but the loop's:
        the writer's loop finishes the commits while this waits)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            if loop.is_running():
                asyncio.run_coroutine_threadsafe(self._aclose(), loop).result(COMMIT_TIMEOUT_S + CONNECT_TIMEOUT_S)
            else:
                loop.run_until_complete(self._aclose())
        self.store.close()


def _url_options(url: str) -> str:
    """The ``options`` the URL gives the server's sessions ("" when none)."""
    return psycopg.conninfo.conninfo_to_dict(url).get("options") or ""


def _batch(rows: list[tuple]) -> tuple[bytes, bytes]:
    """The parameters of _INSERT for receipt rows: the receipts as a JSON array of objects,
    then their tool calls'."""
    receipts = [{name: _json_value(value) for name, value in zip(RECEIPT_COLUMNS, row)} for row in rows]
    calls = [{"key": key, "receipt_id": receipt_id} for key, receipt_id in call_rows(rows)]
    return dumps_line(receipts), dumps_line(calls)


def _one_params(row: tuple) -> list[bytes | None]:
    """The parameters of _INSERT_ONE for one receipt row, as the server's text input reads
    them (a float's repr, "nan" and "inf" included, is float8 input)."""
    columns = [None if value is None else str(value).encode() for value in row[:len(RECEIPT_COLUMNS)]]
    return [*columns, dumps_line([key for key, _ in call_rows([row])])]


async def _run_prepared(conn: psycopg.AsyncConnection, name: str, params: list[bytes | None],
                        deadline: float) -> tuple[int, int]:
    """The one row (two integers) of the statement ``conn`` prepared as ``name``, run with
    text ``params`` (TimeoutError past the loop's time ``deadline``): sent and read through psycopg's libpq layer (psycopg.pq) from the
    running loop's reader and writer callbacks, rather than through a cursor.

    Why not ``await conn.execute``: the cursor's path (its adaptation, prepared-statement
    cache and generator-driven waits) costs the loop's thread more than the commit's own
    work. Measured one receipt at a time (benchmarks/bench_receipt_commit.py, the same batch
    statement both ways, load 9): 130 us of the loop's CPU per commit through the cursor,
    60 us here (39 us with _INSERT_ONE)."""
    pgconn = conn.pgconn
    pgconn.send_query_prepared(name.encode(), params)
    loop = asyncio.get_running_loop()
    fd = pgconn.socket
    sending = bool(pgconn.flush())  # a big batch may not fit the socket's buffer at once
    results: list[pq.abc.PGresult] = []
    while True:
        await _ready(loop, fd, sending, deadline)
        if sending:
            sending = bool(pgconn.flush())
        pgconn.consume_input()
        while not sending and not pgconn.is_busy():
            result = pgconn.get_result()
            if result is None:
                return _wal_positions(results)
            results.append(result)


async def _ready(loop: asyncio.AbstractEventLoop, fd: int, writing: bool, deadline: float) -> None:
    """Once ``fd`` can be read (or, when ``writing``, written); TimeoutError once the loop's
    time is past ``deadline``. The loop stops watching it
    before this returns, so before libpq may close it (the server hung up): uvloop, watching
    a closed descriptor whose number the next connection took, never woke that one."""
    woken = loop.create_future()

    def wake() -> None:
        if not woken.done():
            woken.set_result(None)

    def too_late() -> None:
        if not woken.done():
            woken.set_exception(asyncio.TimeoutError())

    loop.add_reader(fd, wake)
    if writing:
        loop.add_writer(fd, wake)
    timer = loop.call_at(deadline, too_late)
    try:
        await woken
    finally:
        timer.cancel()
        loop.remove_reader(fd)
        if writing:
            loop.remove_writer(fd)


def _wal_positions(results: list) -> tuple[int, int]:
    """The (insert, flush) WAL positions a writer's statement answered; its error if it failed."""
    for result in results:
        if result.status != pq.ExecStatus.TUPLES_OK:
            raise psycopg.errors.error_from_result(result, encoding="utf-8")
    if len(results) != 1 or results[0].ntuples != 1:
        raise psycopg.InterfaceError(f"the receipt statement answered {len(results)} results, not one row")
    return int(results[0].get_value(0, 0)), int(results[0].get_value(0, 1))


def _json_value(value: Any) -> Any:
    # JSON has no NaN or infinity; as text the server's float8 input reads them back.
    return str(value) if isinstance(value, float) and not math.isfinite(value) else value
