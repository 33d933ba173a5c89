"""How ``--jobs`` workers (admiss/workers.py) and ``check_many(jobs=N)``'s (admiss/runner.py)
start: forked from a fork server, which ``admiss check`` starts first thing, so that it imports the workers' modules while this
process loads its own and the rubric.

Only the standard library here: ``admiss check --jobs N`` starts the server before it
imports the rest of admiss.
"""

from __future__ import annotations

import contextlib
import os
import signal
from typing import Any, Iterator

# What a worker imports: the workers' module (and with it the check's), check_many's
# (admiss.runner), and the trace readers that a worker's first bundle loads. The fork server imports them once, so a
# worker forked from it starts with them (without bytecode caches, about 0.3 CPU-s a worker).
# admiss.forkfrozen, last, freezes what they loaded, so that no worker's collections copy it.
_PRELOAD = ["admiss.workers", "admiss.runner", "admiss.traces.read", "admiss.traces.adk", "admiss.traces.build",
            "admiss.forkfrozen"]


def worker_context() -> Any:
    """The multiprocessing context workers start in: forked from a fork server where the
    platform has one, else spawned.

    Never forked from this process: it may run threads (the executors' managers, the
    telemetry writer) that a fork would copy mid-step, locks and all. The fork server is a
    fresh interpreter, started by fork and exec, that imports the workers' modules, starts
    no thread, and then only forks.
    """
    import multiprocessing

    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(_PRELOAD)
    return context


def start_worker_server() -> None:
    """Start the fork server, if there is one and it is not running."""
    if worker_context().get_start_method() == "forkserver":
        from multiprocessing import forkserver

        forkserver.ensure_running()


def stop_worker_server() -> None:
    """Stop the fork server, if running, and wait for it: call it once every worker has
    ended. So no process outlives the run, and the workers' CPU time counts as this run's
    (``time admiss check`` shows it; a server left to end by itself is reaped by no one)."""
    from multiprocessing import forkserver

    # Private, as concurrent.futures leaves them (there since 3.4): the server's pid, and
    # _stop, which closes its "parent alive" pipe and waits for it to end.
    server = forkserver._forkserver
    if server._forkserver_pid is not None:
        # Every worker has ended and been reaped by it, so it has nothing left to do, and
        # its own exit (unloading every module) would add 25-80 ms to the run's end.
        with contextlib.suppress(ProcessLookupError):
            os.kill(server._forkserver_pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        server._stop()


@contextlib.contextmanager
def worker_server() -> Iterator[None]:
    """The fork server running for the block (started already or now), stopped at its end."""
    start_worker_server()
    try:
        yield
    finally:
        stop_worker_server()
