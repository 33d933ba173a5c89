"""The gateway's lifespan sets the collector up for serving: what was built before is
frozen and the young generation's threshold raised (admiss/collector.py says why)."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path

from admiss.collector import SERVING_YOUNG_THRESHOLD
from admiss.serve.app import Gateway, _Lifespan
from admiss.serve.router import routers_for

RUBRIC = """
CHAIN answer {
  RUNG cheap MODEL "fake/cheap" {
    GATE non_empty ON ABSTAIN fail_closed
  }
}
"""


def test_the_lifespan_freezes_what_was_built_and_raises_the_young_threshold(tmp_path: Path, upstream):
    (tmp_path / "r.rubric").write_text(RUBRIC)
    (tmp_path / "admiss.toml").write_text(f'[providers.fake]\nbase_url = "{upstream.url}"\n'
                                          '[serve]\nstore = "receipts.db"\n')
    routers = routers_for(tmp_path / "r.rubric", tmp_path / "admiss.toml")
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)  # CPython's defaults, whatever an earlier test left

    async def serve_briefly() -> tuple[tuple[int, int, int], int]:
        lifespan = _Lifespan(Gateway(routers, frozenset()))
        await lifespan.__aenter__()
        try:
            return gc.get_threshold(), gc.get_freeze_count()
        finally:
            await lifespan.__aexit__(None, None, None)

    try:
        thresholds, frozen = asyncio.run(serve_briefly())
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()
    assert thresholds == (SERVING_YOUNG_THRESHOLD, 10, 10)
    assert SERVING_YOUNG_THRESHOLD > 700
    assert frozen > 0
