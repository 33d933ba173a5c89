"""Per-process CPU for bench_otel.py: with this folder on PYTHONPATH and
ADMISS_BENCH_PROBE naming a file, every Python process of a run (``admiss check`` and its
telemetry exporter) appends one JSON line there as it ends: its pid, its parent's, when it
started and ended (CLOCK_BOOTTIME, seconds) and its user + system CPU seconds. The
exporter ends by os._exit (it skips the interpreter's teardown), so that is wrapped too.
A run's own rusage gives only the sum of the process and the children it waited for.
With ADMISS_BENCH_DISCARD set, the exporter discards what it reads (_discarding_exporter)."""

from __future__ import annotations

import atexit
import json
import os
import sys
import time

_OUT = os.environ.get("ADMISS_BENCH_PROBE")


def _started() -> float:
    with open("/proc/self/stat") as stat:
        ticks = int(stat.read().rsplit(")", 1)[1].split()[19])  # field 22, starttime
    return ticks / os.sysconf("SC_CLK_TCK")


def _said(started: float) -> None:
    times = os.times()
    line = {"pid": os.getpid(), "ppid": os.getppid(), "argv": sys.argv[:2], "started": started,
            "ended": time.clock_gettime(time.CLOCK_BOOTTIME), "cpu": times.user + times.system}
    with open(_OUT, "a") as out:
        out.write(json.dumps(line) + "\n")


if _OUT and os.path.exists("/proc/self/stat"):
    _STARTED = _started()
    atexit.register(_said, _STARTED)
    _exit = os._exit

    def _said_then_exit(code: int) -> None:
        _said(_STARTED)
        _exit(code)

    os._exit = _said_then_exit


def _discarding_exporter() -> None:
    """admiss check's exporter process when ADMISS_BENCH_DISCARD is set: it reads its pipe to
    the end and sends nothing, so that such a run's cost over a run without telemetry is the
    checking process's own share (bench_otel.py's "discarded" runs)."""
    while os.read(0, 1 << 20):
        pass
    sys.stdout.write('{"sent": 0, "failed": 0}\n')
    sys.stdout.flush()
    os._exit(0)


# The exporter is the one process of a run started with -c (otel._EXPORTER_CODE), whose program
# imports exporter_main from this module next.
if os.environ.get("ADMISS_BENCH_DISCARD") and sys.argv[:1] == ["-c"]:
    from admiss.integrations import otel

    otel.exporter_main = _discarding_exporter
