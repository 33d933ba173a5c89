"""Pausing Python's cyclic garbage collector while a rubric is compiled.

Parsing, lowering and building checkers make a great many small objects that all stay
alive until the rubric is built, so the collector can free nothing meanwhile; left on, it
walks them again and again (over a third of the compile time of a large rubric, a share
that grew with its size).
Reports were measured too: pausing it while building one gained nothing there.
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
