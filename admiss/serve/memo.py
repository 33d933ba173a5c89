"""A bounded memo, across requests, of what a request's messages read to.

An agent resends its whole conversation with every turn, so all but the newest messages of
its request were checked and read in its request before. The gateway keeps what a run of
messages (a message and the tool results after it) read to, and skips that work when the
same content comes again.

An entry is found only by the exact content: the compact JSON text of the messages (which
tells ``1`` from ``1.0`` and ``true``) and, unless both were read by orjson, their equality
as values (which tells NaN, written ``null``, from ``null``, and a Python caller's tuple from
a list). Nothing a client changes can reuse a reading, and
what is kept is only ever what the same work gives for that content: the memo skips work,
it never changes a result. It holds at most ``entries`` entries and ``size`` bytes of keys,
dropping the oldest first, and takes no content longer than ``largest`` bytes,
so a client cannot grow it.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Hashable

import attrs

from admiss import jsonio

# A memo key: a value's exact JSON text (None for a value orjson cannot write, which is then
# not memoized).
content_key = jsonio.exact_text
content_keys = jsonio.exact_texts


@attrs.frozen
class Known:
    """A request's messages as the memo found them, in runs (a message and the tool results
    after it: what an agent adds in a turn): where each run starts, its key, and the run
    kept for that content (equal to it; the first of its kind the memo saw, so that the
    conversation's memo compares it by identity rather than deeply)."""

    starts: tuple[int, ...]
    keys: tuple[bytes, ...]
    kept: tuple[list, ...]
    # The exact JSON text of the messages, their runs' keys joined: what writing them again
    # would give (the request's repeated-key check and the rung's upstream body take it).
    text: bytes


def known_runs(messages: list, ends: list[int], memo: Memo, check: Callable[[list, int], Any],
               exact: bool = False) -> tuple[list, Known | None]:
    """``check(run, start)`` of each run of ``messages`` (ending at ``ends``), taken from
    ``memo`` when the same content passed it before, and what the memo knows of the runs
    (None when a run has no key). ``check`` raises for a run that fails; what it returns is
    kept for the content, so it must depend on the content alone (``start`` only names the
    messages in its error)."""
    # Each step over every run at once: an agent's request has tens of runs, all but one or
    # two found, and each step's Python call per run was paid tens of times a request (this
    # and jsonio's one comparison took 8 % off the request side's instructions, callgrind).
    starts = [0, *ends[:-1]]
    runs = [messages[start:end] for start, end in zip(starts, ends)]
    keys = content_keys(runs)
    found = memo.get_all(keys, runs, exact)
    for index, held in enumerate(found):
        if held is None:
            run, key = runs[index], keys[index]
            found[index] = held = (run, check(run, starts[index]))
            if key is not None:
                memo.put(key, run, held, len(key), exact)
    checked = [held[1] for held in found]
    if None in keys:
        return checked, None
    return checked, Known(tuple(starts), tuple(keys), tuple(held[0] for held in found), jsonio.joined_arrays(keys))


class Memo:
    """Readings by exact content, bounded; ``hits`` and ``misses`` count the look-ups.

    An entry is found by its key and then compared with the content asked for, unless both
    were read by orjson from JSON text (``exact``): orjson writes no two of its own values
    alike, so their keys alone tell them apart, and comparing an agent's old messages with
    its new ones, deeply, cost more than checking them again (benchmarks/bench_gateway_cpu.py).
    Look-ups change nothing, so they need no lock; adding does, and drops the oldest entries."""

    def __init__(self, entries: int, size: int, largest: int):
        self._entries, self._size, self._largest = entries, size, largest
        # key -> (the content as a value, its reading, the key's size, whether exact); oldest first.
        self._held: dict[Hashable, tuple[Any, Any, int, bool]] = {}
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key: Hashable, content: Any, exact: bool = False) -> Any:
        """The reading kept for ``content`` (whose key is ``key``), or None."""
        return self.get_all([key], [content], exact)[0]

    def get_all(self, keys: list, contents: list, exact: bool = False) -> list:
        """The reading kept for each of ``contents`` (whose keys are ``keys``), or None
        where there is none (or the key is None)."""
        held, found, hits = self._held, [], 0
        for key, content in zip(keys, contents):
            entry = held.get(key) if key is not None else None
            if entry is None or not (exact and entry[3]) and entry[0] != content:
                found.append(None)
            else:
                found.append(entry[1])
                hits += 1
        self.hits += hits
        self.misses += len(found) - hits
        return found

    def put(self, key: Hashable, content: Any, reading: Any, size: int, exact: bool = False) -> None:
        """Keep ``reading`` for ``content``, unless it is larger than the memo takes."""
        if size > self._largest:
            return
        with self._lock:
            held = self._held
            if key in held:
                return
            while held and (len(held) >= self._entries or self._bytes + size > self._size):
                self._bytes -= held.pop(next(iter(held)))[2]
            held[key] = (content, reading, size, exact)
            self._bytes += size

    def __len__(self) -> int:
        return len(self._held)

    @property
    def held_bytes(self) -> int:
        """The size of the keys held."""
        return self._bytes

    @property
    def hit_rate(self) -> float:
        """The share of look-ups that found a reading (0 before any)."""
        return self.hits / max(1, self.hits + self.misses)
