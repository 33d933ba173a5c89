"""The receipt store's interface: what every backend (``sqlite.py``, ``postgres.py``) keeps,
and what serve, savings and ``admiss receipts`` call.

The rows are fixed (``admiss savings`` and other tools read them)::

    receipts(id, created_at, chain, served_rung, outcome, model_cost_usd, gate_cost_usd, body)

``body`` is the whole receipt as JSON text; the other columns repeat what queries filter on.
``created_at`` is ISO-8601 UTC with milliseconds (``2026-11-30T23:10:00.123Z``), so text
order is time order. Beside them: ``served_tool_calls`` (the tool calls the gateway served,
for ``[serve] tool_evidence = "served"``) and ``disabled_gates`` (the gates an error budget
disabled, shared by every gateway writing to the store: docs/serve.md#running-a-fleet).

A :class:`ReceiptStore` is used by one thread at a time; the gateway writes through a
:class:`StoreWriter`, which commits the receipts handed to it together (group commit) and
settles each one's future only once its transaction is committed.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
from datetime import datetime, timezone
from typing import Any, Awaitable, Callable, Iterator, Protocol

from admiss.jsonio import dumps_line

RECEIPT_COLUMNS = ("id", "created_at", "chain", "served_rung", "outcome", "model_cost_usd", "gate_cost_usd", "body")
# A gate as the disabled_gates table keys it: (chain, rung, position on the rung, gate kind).
GateKey = tuple[str, str, int, str]
# What a writer calls once a queued receipt is committed (StoreWriter.queue).
Stored = Callable[[], None] | None


class StoreError(Exception):
    """The store is not a receipt store, or cannot be opened, read or written; the message
    says which (and never holds a password: each backend masks its location)."""


class StoreBusy(StoreError):
    """Another connection (another program) holds the store's write lock."""


class DamagedRow(StoreError):
    """A row whose body is not a receipt (not text, not JSON, not an object); ``receipt_id``
    names it. Another program can write anything into a store, so a read checks each body."""

    def __init__(self, where: Any, receipt_id: Any, problem: str):
        super().__init__(f"{where}: receipt row {receipt_id!r} is damaged: {problem}")
        self.receipt_id = receipt_id
        self.problem = problem


def call_key(call_id: str, name: str, arguments: str) -> str:
    """What identifies a tool call the gateway served: its id, its tool and its exact
    arguments (a client that kept the id but changed the arguments has another call).

    A model's reply can put in the arguments what no text column holds: a lone surrogate
    (the JSON escape "\\ud800"; not UTF-8, so neither SQLite nor PostgreSQL takes it) or a
    NUL (PostgreSQL's text refuses it). Such a key is kept as the hex of its UTF-8 bytes
    (surrogates as such) after a "\\x1e": it has no "\\x1f", so it is never the key of
    another call, and the same call always gets it."""
    key = f"{call_id}\x1f{name}\x1f{arguments}"
    if "\x00" not in key:
        try:
            key.encode("utf-8")
            return key
        except UnicodeEncodeError:  # a lone surrogate
            pass
    return "\x1e" + key.encode("utf-8", "surrogatepass").hex()


def _call_keys(receipt: dict[str, Any]) -> tuple[str, ...]:
    calls = receipt.get("tool_calls") or ()
    return tuple(call_key(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in calls)


def receipt_row(receipt: dict[str, Any], body: str | None = None) -> tuple:
    """The row of ``receipt``: the eight receipt columns, then the keys of its tool calls.
    ``body``: the receipt's compact JSON text (jsonio.dumps_line's), when the caller has it."""
    chain = receipt["chain"]
    return (
        receipt["id"],
        receipt["created_at"],
        chain["name"],
        chain["served"],
        "served" if chain["served"] is not None else "exhausted",
        float(chain["model_cost_usd"]),
        float(chain["gate_cost_usd"]),
        dumps_line(receipt).decode("utf-8") if body is None else body,
        _call_keys(receipt),
    )


def call_rows(rows: list[tuple]) -> list[tuple[str, str]]:
    """(call key, receipt id) for each tool call the rows served."""
    return [(key, row[0]) for row in rows if len(row) > len(RECEIPT_COLUMNS) for key in row[len(RECEIPT_COLUMNS)]]


def receipt_of(where: Any, receipt_id: Any, body: Any) -> dict[str, Any]:
    """The receipt a row's body holds; DamagedRow when it holds none."""
    if not isinstance(body, str):
        raise DamagedRow(where, receipt_id, f"its body is {type(body).__name__}, not JSON text")
    try:
        receipt = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise DamagedRow(where, receipt_id, f"its body is not JSON ({exc})") from None
    if not isinstance(receipt, dict):
        raise DamagedRow(where, receipt_id, "its body is not a JSON object")
    return receipt


def receipts_of(where: Any, rows: Iterator[tuple[Any, Any]],
                skip: Callable[[DamagedRow], None] | None) -> Iterator[dict[str, Any]]:
    """The receipts of (id, body) rows; a damaged row raises, or with ``skip`` is handed to it."""
    for receipt_id, body in rows:
        try:
            yield receipt_of(where, receipt_id, body)
        except DamagedRow as damaged:
            if skip is None:
                raise
            skip(damaged)


class ReceiptStore(Protocol):
    """One connection's view of a store (SQLite file or PostgreSQL database)."""

    # Where the store is, fit for messages: the file's path, or the URL without its password.
    where: str

    def put(self, receipt: dict[str, Any]) -> None:
        """Store one receipt (committed when this returns)."""

    def put_many(self, receipts: list[dict[str, Any]]) -> None:
        """Store receipts in one transaction: all of them or, on an error, none."""

    def get(self, receipt_id: str) -> dict[str, Any] | None:
        """The receipt of that id, or None; DamagedRow when its row holds no receipt."""

    def served(self, keys: list[str]) -> set[str]:
        """Those of ``keys`` (:func:`call_key`) whose tool call a receipt of this store served."""

    def iter_since(self, since: str | None = None,
                   skip: Callable[[DamagedRow], None] | None = None) -> Iterator[dict[str, Any]]:
        """Every receipt created at or after ``since`` (a :func:`utc_timestamp`), oldest first.
        A damaged row raises :class:`DamagedRow`, or with ``skip`` is handed to it and passed."""

    def counts(self) -> dict[tuple[str, str], int]:
        """How many receipts there are by (chain, outcome)."""

    def writable(self) -> bool:
        """Whether a write could be committed now."""

    def sync_gates(self, disabled: dict[GateKey, str]) -> dict[GateKey, str]:
        """Add ``disabled`` (gate -> reason) to the store's disabled gates, keeping a gate's
        first reason; every disabled gate the store holds then."""

    def enable_gates(self, chain: str | None = None) -> int:
        """Take the disabled gates (of ``chain``, else all) off the store; how many there were."""

    def close(self) -> None: ...


class StoreWriter(Protocol):
    """How the gateway writes to a store from its event loop."""

    store: ReceiptStore

    def queue(self, receipt: dict[str, Any], body: str | None = None, stored: Stored = None) -> asyncio.Future:
        """Queue ``receipt`` for the next commit; the returned future is settled by it
        (StoreError when it failed). Call from the event loop. ``body``: the receipt's
        compact JSON text, when the caller has it (receipt_row). ``stored``: called on the
        loop once the receipt is committed, before the future settles, even when the future
        was cancelled meanwhile (its request gave up; the receipt is in the store all the same)."""

    async def put(self, receipt: dict[str, Any]) -> None:
        """Store ``receipt``; return once it is committed."""

    def aread(self, call: Callable[..., Any], *args: Any) -> Awaitable[Any]:
        """``call(store, *args)`` off the event loop, on a connection of its own."""

    def close(self) -> None:
        """Write what is queued and close the store (from any thread but the loop's)."""


def unforeseen(where: str, exc: Exception) -> StoreError:
    """A write that failed for a reason no backend foresaw (a bug of ours, not the
    database's): logged with its traceback, and a StoreError for the batch's requests, which
    would otherwise wait for their receipts forever."""
    logging.getLogger("uvicorn.error").error("receipt store %s: a write failed unforeseen", where, exc_info=exc)
    return StoreError(f"{where}: cannot write receipts: {type(exc).__name__}")


def settle(done: asyncio.Future, error: Exception | None, stored: Stored = None) -> None:
    """Settle a queued receipt's future: committed (None) or not (the error); once committed,
    call its ``stored`` first (StoreWriter.queue)."""
    if error is None and stored is not None:
        try:
            stored()
        except Exception as exc:  # noqa: BLE001 - the callback's failure is its own: the future still settles
            done.get_loop().call_exception_handler({"message": "a stored receipt's callback failed", "exception": exc,
                                                    "future": done})
    if done.done():  # the request was cancelled while its receipt was being written
        return
    if error is None:
        done.set_result(None)
    else:
        done.set_exception(error)


def utc_timestamp(moment: datetime | None = None) -> str:
    """``moment`` (default: now) as the store writes times: UTC, milliseconds, a ``Z``."""
    if moment is None:
        return stamp_of_ns(time.time_ns())
    moment = moment.astimezone(timezone.utc)
    return moment.isoformat(timespec="milliseconds")[:-len("+00:00")] + "Z"


def stamp_of_ns(ns: int) -> str:
    """:func:`utc_timestamp` of a time in nanoseconds since the epoch, its milliseconds cut
    as datetime.isoformat cuts them. Every request takes one: the text up to the second is
    made once a second and each millisecond's tail once: a fifth of datetime's time (1.0
    against 4-6 us on a loaded machine; an f-string's ``:03d`` alone took 0.8; python -m timeit)."""
    second, ms = divmod(ns // 1_000_000, 1000)
    return _second_text(second) + _MILLISECONDS[ms]


_MILLISECONDS = tuple(f".{ms:03d}Z" for ms in range(1000))


@functools.lru_cache(maxsize=1)
def _second_text(second: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))


def parse_since(text: str) -> str:
    """A ``--since`` time (ISO-8601: a date, or a date and time with ``Z`` or an offset;
    no zone means UTC) as a store timestamp; ValueError when it is none of these."""
    moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return utc_timestamp(moment)
