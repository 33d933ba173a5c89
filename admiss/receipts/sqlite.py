"""The SQLite receipt store (the default): one file in WAL mode, the rows of
:mod:`admiss.receipts.store`.

``open_store(path)`` creates the file and its tables when missing; one :class:`SQLiteStore`
is used by one thread at a time; the gateway writes through a :class:`SQLiteWriter`, which
commits the receipts of one turn of its event loop in one transaction.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any, Callable, Iterator

from admiss.receipts.store import (RECEIPT_COLUMNS, DamagedRow, GateKey, StoreBusy, StoreError, Stored, call_rows,
                                   receipt_of, receipt_row, receipts_of, settle,
                                   unforeseen)

SCHEMA = """
CREATE TABLE IF NOT EXISTS receipts (
  id TEXT PRIMARY KEY,
  created_at TEXT NOT NULL,
  chain TEXT NOT NULL,
  served_rung TEXT,
  outcome TEXT NOT NULL,
  model_cost_usd REAL NOT NULL,
  gate_cost_usd REAL NOT NULL,
  body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS receipts_created_at ON receipts(created_at);
CREATE TABLE IF NOT EXISTS served_tool_calls (
  key TEXT PRIMARY KEY,
  receipt_id TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS disabled_gates (
  chain TEXT NOT NULL,
  rung TEXT NOT NULL,
  position INTEGER NOT NULL,
  gate TEXT NOT NULL,
  reason TEXT NOT NULL,
  PRIMARY KEY (chain, rung, position, gate)
);
"""

_INSERT = "INSERT INTO receipts VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
_INSERT_CALL = "INSERT OR IGNORE INTO served_tool_calls VALUES (?, ?)"
_INSERT_GATE = "INSERT OR IGNORE INTO disabled_gates VALUES (?, ?, ?, ?, ?)"
_RECEIPT_COLUMNS = len(RECEIPT_COLUMNS)


class SQLiteStore:
    def __init__(self, connection: sqlite3.Connection, path: Path):
        self._db = connection
        self.path = path
        self.where = str(path)

    def put(self, receipt: dict[str, Any]) -> None:
        """Store one receipt (committed when this returns)."""
        self.put_many([receipt])

    def put_many(self, receipts: list[dict[str, Any]]) -> None:
        """Store receipts in one transaction: all of them or, on an error, none."""
        self.put_rows([receipt_row(r) for r in receipts])

    def put_rows(self, rows: list[tuple]) -> None:
        """:meth:`put_many` for receipts already made rows (by :func:`receipt_row`)."""
        try:
            with self._db:
                self._db.executemany(_INSERT, [row[:_RECEIPT_COLUMNS] for row in rows])
                calls = call_rows(rows)
                if calls:
                    self._db.executemany(_INSERT_CALL, calls)
        except sqlite3.OperationalError as exc:
            kind = StoreBusy if "locked" in str(exc) or "busy" in str(exc) else StoreError
            raise kind(f"{self.path}: cannot write receipts: {exc}") from None
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot write receipts: {exc}") from None

    def wait_when_locked(self, seconds: float) -> None:
        """How long a write waits for another connection's write lock before StoreBusy.
        0 gives up at once rather than sleeping in SQLite's busy handler, so that a caller on
        an event loop can retry without blocking it."""
        self._db.execute(f"PRAGMA busy_timeout={int(seconds * 1000)}")

    def stop_auto_checkpoints(self) -> None:
        """Leave checkpoints to the caller (a :class:`SQLiteWriter` runs them off the loop)."""
        self._db.execute("PRAGMA wal_autocheckpoint=0")

    def get(self, receipt_id: str) -> dict[str, Any] | None:
        try:
            row = self._db.execute("SELECT body FROM receipts WHERE id = ?", (receipt_id,)).fetchone()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: cannot read receipts: {exc}") from None
        return None if row is None else receipt_of(self.path, receipt_id, row[0])

    def served(self, keys: list[str]) -> set[str]:
        """Those of ``keys`` (:func:`call_key`) whose tool call a receipt of this store served."""
        found: set[str] = set()
        try:
            for start in range(0, len(keys), 500):  # SQLite's bound on parameters per statement
                chunk = keys[start:start + 500]
                query = f"SELECT key FROM served_tool_calls WHERE key IN ({','.join('?' * len(chunk))})"
                found.update(row[0] for row in self._db.execute(query, chunk))
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):  # a store written before tool calls were served
                return found
            raise StoreError(f"{self.path}: cannot read receipts: {exc}") from None
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: cannot read receipts: {exc}") from None
        return found

    def iter_since(self, since: str | None = None,
                   skip: Callable[[DamagedRow], None] | None = None) -> Iterator[dict[str, Any]]:
        """Every receipt created at or after ``since`` (a :func:`utc_timestamp`), oldest first.

        A damaged row raises :class:`DamagedRow`, or with ``skip`` is handed to it and passed.
        """
        query = "SELECT id, body FROM receipts WHERE created_at >= ? ORDER BY created_at, rowid"
        try:
            yield from receipts_of(self.path, self._db.execute(query, (since or "",)), skip)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: cannot read receipts: {exc}") from None

    def counts(self) -> dict[tuple[str, str], int]:
        """How many receipts there are by (chain, outcome)."""
        rows = self._db.execute("SELECT chain, outcome, COUNT(*) FROM receipts GROUP BY chain, outcome")
        return {(chain, outcome): count for chain, outcome, count in rows}

    def writable(self) -> bool:
        """Whether a write could be committed now (a write lock is taken and given back)."""
        try:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute("ROLLBACK")
            return True
        except sqlite3.Error:
            return False

    def sync_gates(self, disabled: dict[GateKey, str]) -> dict[GateKey, str]:
        try:
            with self._db:
                self._db.executemany(_INSERT_GATE, [(*key, reason) for key, reason in disabled.items()])
                rows = self._db.execute("SELECT chain, rung, position, gate, reason FROM disabled_gates").fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot share error budgets: {exc}") from None
        return {(chain, rung, position, gate): reason for chain, rung, position, gate, reason in rows}

    def enable_gates(self, chain: str | None = None) -> int:
        try:
            with self._db:
                return self._db.execute("DELETE FROM disabled_gates WHERE ? IS NULL OR chain = ?", (chain, chain)).rowcount
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot write: {exc}") from None

    def close(self) -> None:
        self._db.close()


def open_store(path: str | Path, create: bool = True, read_only: bool = False) -> SQLiteStore:
    """The store at ``path``, made (with its table) when ``create`` and missing; opened
    read-only (never written, so a gateway may go on writing it) when ``read_only``."""
    path = Path(path)
    if not create and not path.is_file():
        raise StoreError(f"{path}: no such receipt store")
    try:
        # check_same_thread=False: the gateway writes from its event loop's thread and may
        # close from another; one thread at a time uses it.
        if read_only:
            # Quoted: a "?" or "#" in a file name would otherwise end the path in the URI.
            uri = f"file:{urllib.parse.quote(path.resolve().as_posix())}?mode=ro"
            db = sqlite3.connect(uri, uri=True, check_same_thread=False)
        else:
            db = sqlite3.connect(path, check_same_thread=False)
        if create:
            db.execute("PRAGMA journal_mode=WAL")
            # In WAL mode NORMAL keeps every committed transaction across a process crash;
            # only a power cut can lose the last ones.
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(SCHEMA)
        _check_is_store(db, path)
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: not a receipt store: {exc}") from None
    return SQLiteStore(db, path)


def _check_is_store(db: sqlite3.Connection, path: Path) -> None:
    columns = [row[1] for row in db.execute("PRAGMA table_info(receipts)")]
    wanted = ["id", "created_at", "chain", "served_rung", "outcome", "model_cost_usd", "gate_cost_usd", "body"]
    if columns != wanted:
        raise StoreError(f"{path}: not a receipt store (no receipts table of the admiss schema)")


class SQLiteWriter:
    """Writes receipts from the event loop in group commits, and reads them off it.

    ``await writer.put(receipt)`` returns once the receipt is committed, so a response
    sent after it always has its receipt. Every receipt handed over in one turn of the
    event loop goes into one transaction, committed on the loop thread at the start of the
    next turn: no hand-over to another thread, whose wake-up (and wait for the GIL behind a
    busy loop) would cost each request more than the commit. In WAL mode with
    ``synchronous=NORMAL`` a commit writes to the WAL without an fsync; the fsyncs come with
    checkpoints, which a thread of the writer's own runs on its own connection, so the loop
    never waits for the disk to sync.
    """

    # How long a commit waits for another program's write lock (retrying every BUSY_RETRY_S,
    # the loop serving on meanwhile) before its requests get the store's error.
    BUSY_WAIT_S = 5.0
    BUSY_RETRY_S = 0.002

    def __init__(self, store: SQLiteStore):
        self.store = store
        self._identity = _file_identity(store.path)
        store.wait_when_locked(0)
        self._pending: list[tuple[tuple, asyncio.Future, Stored]] = []
        self._busy_since: float | None = None
        # The connection is used by the loop's commits and by close(), which may come from
        # another thread; the lock keeps them apart.
        self._lock = threading.Lock()
        self._checkpoints = _Checkpointer(store)

    async def put(self, receipt: dict[str, Any]) -> None:
        await self.queue(receipt)

    def queue(self, receipt: dict[str, Any], body: str | None = None, stored: Stored = None) -> asyncio.Future:
        """Queue ``receipt`` for the next commit; the returned future is settled by it
        (StoreError when it failed). Call from the event loop. ``body``: its JSON text
        (receipt_row); ``stored``: called once it is committed (StoreWriter.queue)."""
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        if not self._pending:
            loop.call_soon(self._commit)
        self._pending.append((receipt_row(receipt, body), done, stored))
        return done

    def _commit(self) -> None:
        with self._lock:
            batch, self._pending = self._pending, []
            if not batch:  # close() wrote them
                return
            error = self._write([row for row, _, _ in batch])
            if isinstance(error, StoreBusy) and self._retrying():
                self._pending = batch + self._pending
                asyncio.get_running_loop().call_later(self.BUSY_RETRY_S, self._commit)
                return
            self._busy_since = None
        for _, done, stored in batch:
            settle(done, error, stored)
        self._checkpoints.wrote(len(batch))

    def _retrying(self) -> bool:
        """Whether a commit that found the store locked should try again."""
        now = time.monotonic()
        if self._busy_since is None:
            self._busy_since = now
        return now - self._busy_since < self.BUSY_WAIT_S

    def _write(self, rows: list[tuple]) -> StoreError | None:
        # A file removed or replaced under the open connection would take these receipts
        # with it, unseen: refuse them instead, so that their requests are not answered.
        if _file_identity(self.store.path) != self._identity:
            return StoreError(f"{self.store.path}: the store file was removed or replaced while in use; "
                              "restart the gateway to open it again")
        try:
            self.store.put_rows(rows)
            return None
        except StoreError as exc:
            return exc
        except Exception as exc:  # noqa: BLE001 - any failure must still answer the batch's requests
            return unforeseen(str(self.store.path), exc)

    async def aread(self, call, *args):
        """``call(store, *args)`` on a connection of its own in a worker thread: reads never
        wait on the loop, and WAL lets them run beside the commits."""
        return await asyncio.get_running_loop().run_in_executor(None, _read_with_own_connection,
                                                                self.store.path, call, args)

    def close(self) -> None:
        """Write what is queued, stop the checkpoints and close the store (from any thread)."""
        with self._lock:
            batch, self._pending = self._pending, []
            self.store.wait_when_locked(self.BUSY_WAIT_S)  # off the loop now: it may wait
            error = self._write([row for row, _, _ in batch]) if batch else None
            for _, done, stored in batch:
                if not done.get_loop().is_closed():
                    done.get_loop().call_soon_threadsafe(settle, done, error, stored)
            self._checkpoints.stop()
            self.store.close()


def _file_identity(path: Path) -> tuple[int, int] | None:
    """The file at ``path`` as the system knows it (device, inode), None when there is none."""
    try:
        found = path.stat()
    except OSError:
        return None
    return found.st_dev, found.st_ino


def _read_with_own_connection(path: Path, call, args: tuple):
    store = open_store(path, create=False)
    try:
        return call(store, *args)
    finally:
        store.close()


class _Checkpointer:
    """Copies the WAL back into the database on a thread and connection of its own, after
    every CHECKPOINT_EVERY receipts (and at least once a second while receipts come), in
    place of SQLite's automatic checkpoint, which would run (and fsync) inside a commit on
    the loop thread."""

    CHECKPOINT_EVERY = 500

    def __init__(self, store: SQLiteStore):
        store.stop_auto_checkpoints()
        self._path = store.path
        self._written = 0
        self._due = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(target=self._work, name="admiss-checkpoints", daemon=True)
        self._thread.start()

    def wrote(self, count: int) -> None:
        self._written += count
        if self._written >= self.CHECKPOINT_EVERY:
            self._written = 0
            self._due.set()

    def stop(self) -> None:
        self._stopping = True
        self._due.set()
        self._thread.join()

    def _work(self) -> None:
        db = sqlite3.connect(self._path, check_same_thread=False)
        try:
            while not self._stopping:
                self._due.wait(1.0)
                self._due.clear()
                # PASSIVE: copy what no reader still needs, never wait for a lock, never
                # hold up a writer. A failure is retried at the next one.
                try:
                    db.execute("PRAGMA wal_checkpoint(PASSIVE)")
                except sqlite3.Error:
                    pass
        finally:
            db.close()
