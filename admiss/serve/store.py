"""The receipt store: one SQLite database (WAL), one row per request the gateway answered.

The schema is fixed (``admiss savings`` and other tools read it)::

    receipts(id TEXT PRIMARY KEY, created_at TEXT, chain TEXT, served_rung TEXT,
             outcome TEXT, model_cost_usd REAL, gate_cost_usd REAL, body TEXT)

``body`` is the whole receipt as JSON; the other columns repeat what queries filter on.
``created_at`` is ISO-8601 UTC with milliseconds (``2026-11-30T23:10:00.123Z``), so text
order is time order.

The API: :func:`open_store` (creates the file and table when missing), ``put``,
``put_many``, ``get``, ``iter_since``, ``counts``, ``close``. One :class:`ReceiptStore` is
used by one thread at a time; the gateway gives it a writer thread of its own
(:class:`StoreWriter`) so writes batch into one transaction and never block the event loop.
"""

from __future__ import annotations

import asyncio
import json
import queue
import sqlite3
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

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
"""

_INSERT = "INSERT INTO receipts VALUES (?, ?, ?, ?, ?, ?, ?, ?)"


class StoreError(Exception):
    """The file is not a receipt store, or cannot be opened or written; the message says which."""


def utc_timestamp(moment: datetime | None = None) -> str:
    """``moment`` (default: now) as the store writes times: UTC, milliseconds, a ``Z``."""
    moment = (moment or datetime.now(timezone.utc)).astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _row(receipt: dict[str, Any]) -> tuple:
    chain = receipt["chain"]
    return (
        receipt["id"],
        receipt["created_at"],
        chain["name"],
        chain["served"],
        "served" if chain["served"] is not None else "exhausted",
        float(chain["model_cost_usd"]),
        float(chain["gate_cost_usd"]),
        json.dumps(receipt, ensure_ascii=False, separators=(",", ":")),
    )


class ReceiptStore:
    def __init__(self, connection: sqlite3.Connection, path: Path):
        self._db = connection
        self.path = path

    def put(self, receipt: dict[str, Any]) -> None:
        """Store one receipt (committed when this returns)."""
        self.put_many([receipt])

    def put_many(self, receipts: list[dict[str, Any]]) -> None:
        """Store receipts in one transaction: all of them or, on an error, none."""
        try:
            with self._db:
                self._db.executemany(_INSERT, [_row(r) for r in receipts])
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot write receipts: {exc}") from None

    def get(self, receipt_id: str) -> dict[str, Any] | None:
        row = self._db.execute("SELECT body FROM receipts WHERE id = ?", (receipt_id,)).fetchone()
        return None if row is None else json.loads(row[0])

    def iter_since(self, since: str | None = None) -> Iterator[dict[str, Any]]:
        """Every receipt created at or after ``since`` (a :func:`utc_timestamp`), oldest first."""
        query = "SELECT body FROM receipts WHERE created_at >= ? ORDER BY created_at, rowid"
        try:
            for (body,) in self._db.execute(query, (since or "",)):
                yield json.loads(body)
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

    def close(self) -> None:
        self._db.close()


def open_store(path: str | Path, create: bool = True) -> ReceiptStore:
    """The store at ``path``, made (with its table) when ``create`` and missing."""
    path = Path(path)
    if not create and not path.is_file():
        raise StoreError(f"{path}: no such receipt store")
    try:
        # check_same_thread=False: the gateway opens the store on one thread and writes on
        # its writer thread; one thread at a time uses it.
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
    return ReceiptStore(db, path)


def _check_is_store(db: sqlite3.Connection, path: Path) -> None:
    columns = [row[1] for row in db.execute("PRAGMA table_info(receipts)")]
    wanted = ["id", "created_at", "chain", "served_rung", "outcome", "model_cost_usd", "gate_cost_usd", "body"]
    if columns != wanted:
        raise StoreError(f"{path}: not a receipt store (no receipts table of the admiss schema)")


class StoreWriter:
    """A thread that owns a store and writes what the event loop hands it, batched.

    ``await writer.put(receipt)`` returns once the receipt is committed, so a response
    sent after it always has its receipt. Receipts that arrive while a batch commits go
    in the next batch, one transaction for all of them.
    """

    def __init__(self, store: ReceiptStore):
        self.store = store
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._work, name="admiss-receipts", daemon=True)
        self._thread.start()

    async def put(self, receipt: dict[str, Any]) -> None:
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        self._queue.put((receipt, loop, done))
        await done

    def read(self, call, *args):
        """Run ``call(store, *args)`` on the writer thread, after the writes queued before it."""
        waiter: queue.SimpleQueue = queue.SimpleQueue()
        self._queue.put((_Read(call, args), None, waiter))
        outcome, value = waiter.get()
        if outcome == "error":
            raise value
        return value

    async def aread(self, call, *args):
        return await asyncio.get_running_loop().run_in_executor(None, self.read, call, *args)

    def close(self) -> None:
        """Write what is queued, then stop the thread and close the store."""
        self._queue.put(None)
        self._thread.join()
        self.store.close()

    def _work(self) -> None:
        while True:
            batch = [self._queue.get()]
            while not self._queue.empty() and batch[-1] is not None:
                batch.append(self._queue.get())
            stop = batch[-1] is None
            self._handle([item for item in batch if item is not None])
            if stop:
                return

    def _handle(self, batch: list) -> None:
        writes = [item for item in batch if not isinstance(item[0], _Read)]
        if writes:
            try:
                self.store.put_many([receipt for receipt, _, _ in writes])
                error = None
            except StoreError as exc:
                error = exc
            for _, loop, done in writes:
                loop.call_soon_threadsafe(_settle, done, error)
        for item, _, waiter in batch:
            if isinstance(item, _Read):
                try:
                    waiter.put(("ok", item.call(self.store, *item.args)))
                except Exception as exc:  # handed to the reader, who raises it
                    waiter.put(("error", exc))


class _Read:
    def __init__(self, call, args):
        self.call = call
        self.args = args


def _settle(done: asyncio.Future, error: Exception | None) -> None:
    if done.done():  # the request was cancelled while its receipt was being written
        return
    if error is None:
        done.set_result(None)
    else:
        done.set_exception(error)


def parse_since(text: str) -> str:
    """A ``--since`` time (ISO-8601: a date, or a date and time with ``Z`` or an offset;
    no zone means UTC) as a store timestamp; ValueError when it is none of these."""
    moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return utc_timestamp(moment)
