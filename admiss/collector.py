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
