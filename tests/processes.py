"""What the tests ask of /proc about a process, in one place."""

import time
from pathlib import Path


def alive(pid: int) -> bool:
    """Whether ``pid`` is a running process. A zombie awaiting its reaper counts as gone, and
    so does one reaped while we look (its stat file gone before we read it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # The command name in parentheses may hold ") ", so the state follows the last ")".
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def gone_within(pids: list[int], seconds: float) -> bool:
    """Whether every pid is gone by the deadline (a generous bound; kills are not instant)."""
    deadline = time.monotonic() + seconds
    while any(alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def children(pid: int) -> set[int]:
    """The processes whose parent is ``pid``, by each one's stat (whichever of its threads
    started it); one that ends while we look is left out."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.add(int(entry.name))
    return found


def cmdline(pid: int) -> bytes:
    """The process's command line, NUL-separated (empty once it has ended)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
