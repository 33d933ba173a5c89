"""Error budgets shared by every gateway writing to one receipt store (a fleet).

Each gateway counts its own gates' runs in its own windows (admiss/budget.py), so a
gateway's requests never wait on another's counts. What is shared is the outcome: the
store's ``disabled_gates`` table. Every SYNC_EVERY_S a gateway writes the gates its own
windows disabled into the table, and reads it back: a gate in the table is disabled here
too, with the reason its window gave; a gate taken off the table (``admiss receipts
enable-gates``) is enabled here again with an empty window. So a gate disabled by one
replica's window is disabled for all within SYNC_EVERY_S, and re-enabled for all the same
way. A gateway that starts reads the table before it serves.

When the store cannot be reached, the gateway keeps the budgets it has and tries again at
the next sync (its requests get 503 anyway: no receipt, nothing served).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable, Iterable

from admiss.receipts import GateKey, StoreError, StoreWriter

SYNC_EVERY_S = 0.5


class SharedBudgets:
    """The error budgets of a gateway's routers, kept in step with the store's table."""

    def __init__(self, writer: StoreWriter, routers: Iterable[Any], on_change: Callable[[], None] = lambda: None):
        self._writer = writer
        self._budgets: dict[GateKey, Any] = {
            (router.chain.name, rung, position, gate): budget
            for router in routers for rung, gate, position, budget in router.gate_budgets()}
        self._in_store: set[GateKey] = set()  # the gates the table held at the last sync
        self._on_change = on_change
        self._task: asyncio.Task | None = None
        self._failing = False  # the last sync failed: said once in the log, not every time

    async def start(self) -> None:
        """Read the table once, then keep in step with it until :meth:`stop`."""
        await self.sync()
        self._task = asyncio.get_running_loop().create_task(self._every())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        await self.sync()  # what this gateway's windows disabled last still reaches the others

    async def _every(self) -> None:
        while True:
            await asyncio.sleep(SYNC_EVERY_S)
            await self.sync()

    async def sync(self) -> None:
        """Publish the gates disabled here, then follow the table."""
        mine = {key: budget.disabled_reason for key, budget in self._budgets.items()
                if budget.disabled and key not in self._in_store}
        try:
            stored = await self._writer.aread(lambda store, disabled: store.sync_gates(disabled), mine)
        except StoreError as exc:
            if not self._failing:
                logging.getLogger("uvicorn.error").warning("error budgets not shared until the store answers: %s", exc)
            self._failing = True
            return
        self._failing = False
        changed = False
        for key, budget in self._budgets.items():
            if key in stored and not budget.disabled:
                budget.disable(stored[key])
                changed = True
            elif key not in stored and key in self._in_store and budget.disabled:
                budget.enable()
                changed = True
        self._in_store = {key for key in stored if key in self._budgets}
        if changed:
            self._on_change()
