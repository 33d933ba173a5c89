"""What the tests ask of /proc about a process, in one place."""

from pathlib import Path


def alive(pid: int) -> bool:
    """Whether ``pid`` is a running process. A zombie awaiting its reaper counts as gone, and
    so does a process reaped while we look (its stat file vanishes between exists and read)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # The command name in parentheses may hold ") ", so the state follows the last ")".
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
