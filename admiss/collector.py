"""Pausing Python's cyclic garbage collector while a rubric is compiled.

Parsing, lowering and building checkers make a great many small objects that all stay
alive until the rubric is built, so the collector can free nothing meanwhile; left on, it
walks them again and again (over a third of the compile time of a large rubric, a share
that grew with its size).
Reports were measured too: pausing it while building one gained nothing there. A batch
instead freezes what was loaded before it (freeze_long_lived), so that full collections
during the batch skip the rubric and the modules.
"""

from __future__ import annotations

import contextlib
import gc
from typing import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the block, then as it was before."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def freeze_long_lived() -> None:
    """Move every object alive now (the loaded rubric, its checkers, the modules) out of
    the collector's sight for the rest of the process.

    A batch allocates reports in a tight loop, and each full collection would walk the
    compiled rubric and every module again, though none of it can become garbage. Called by
    ``admiss check`` and its workers once the rubric is loaded; not by the library, since
    it would also freeze the caller's objects.
    """
    gc.collect()
    gc.freeze()


# The serving gateway's first threshold (CPython's default is 700). A collection of the
# young generation starts when the objects made since the last one, less those freed,
# pass it; at concurrency 50 every request in flight holds its parsed body and conversation
# alive for its model's 100 ms, so the count swings by thousands and crossed 700 about once
# every 5 agent requests, each collection walking the requests in flight and moving them
# on towards the old generation, whose full collections then walked the memo's runs too.
# Measured on `admiss serve` under the agent load (100 +- 25 ms upstream, concurrency 50;
# gc.callbacks timing each collection's thread CPU): 0.18-0.23 ms of collector CPU a
# request at 700, 0.11-0.14 at 2,000, 0.04-0.06 at 10,000, under one cyclic object found a
# request either way (docs/performance.md, "The collector in the gateway").
SERVING_YOUNG_THRESHOLD = 10_000


def freeze_for_serving() -> None:
    """:func:`freeze_long_lived`, then the young generation's threshold raised to
    :data:`SERVING_YOUNG_THRESHOLD` (the older ones' as they were): for a gateway process,
    once it has started."""
    freeze_long_lived()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(SERVING_YOUNG_THRESHOLD, older, oldest)
