"""Helpers shared by the gate tests (imported by name: pytest puts this folder on sys.path)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from admiss import ir
from admiss.gates.base import Candidate, GateCheck, GateContext, GateResult

SCRIPTS = Path(__file__).parent / "scripts"
PYTHON = sys.executable


def gate(kind: str, **options: Any) -> ir.Gate:
    return ir.Gate(kind=kind, **options)


def run_gate(check: GateCheck, candidate: Candidate, ctx: GateContext) -> GateResult:
    """Run one gate to its result in a fresh event loop, closing the run's HTTP clients after."""

    async def go() -> GateResult:
        try:
            return await check.arun(candidate) if check.arun else check.run(candidate)
        finally:
            await ctx.providers.aclose()

    return asyncio.run(go())


def kill_leftovers(pids: list[int]) -> None:
    """Clean up after a failing test so a broken gate does not leave sleepers behind."""
    for pid in pids:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass


def recorded_pids(path: Path, seconds: float = 10.0) -> dict[str, int]:
    deadline = time.monotonic() + seconds
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"the script never wrote {path}")
        time.sleep(0.01)
    return json.loads(path.read_text())
