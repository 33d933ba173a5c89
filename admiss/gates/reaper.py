"""Run a gate program so that nothing it starts outlives it: ``python -I reaper.py TOKEN -- CMD...``.

A process group does not contain a program's tree: a child that calls setsid() leaves the
group, and killing the group misses it. So on Linux the subprocess gate starts this script
in the program's place. It marks itself a child subreaper (PR_SET_CHILD_SUBREAPER), so
every descendant orphaned below it is reparented to it rather than to init, whatever
session or group it moved to; starts the program, with the stdin, stdout and stderr it was
given; and when the program exits, or when it is told to stop (SIGTERM, SIGINT, SIGHUP;
admiss sends SIGTERM on a timeout, an overflow or a cancellation, and the kernel sends it
if admiss itself dies, through PR_SET_PDEATHSIG), it kills every descendant left (SIGKILL
to each child, then to each orphan reparented as those die, until it has no child) and
exits as the program did: the same status, or the same signal.

The death signal follows the thread that started this script (the kernel's rule), and
the gate starts it from the event loop's thread, which outlives the gate's run.

If the program cannot be started it exits 127 with one line on stderr: TOKEN, a space, and
the reason (the token is admiss's, fresh per run, so a program cannot pass its own exit
for this). Standard library only, run isolated (-I): it imports nothing of admiss.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
CANNOT_START = 127
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class _Stop(Exception):
    """Told to stop before the program exited."""


def _stop(signum: int, frame: object) -> None:
    raise _Stop


def _prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


def _children() -> list[int]:
    """The pids whose parent is this process (the program, and orphans reparented here)."""
    me, found = os.getpid(), []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[1]) == me:
            found.append(int(name))
    return found


def _kill_descendants() -> None:
    # A child's own children are reparented here before it can be reaped, so once waitpid
    # says there is no child left, no descendant is left either.
    while True:
        for pid in _children():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def _exit_as(status: int) -> None:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def main(argv: list[str]) -> None:
    token, cmd = argv[1], argv[3:]
    parent = os.getppid()
    for number in STOP_SIGNALS:
        signal.signal(number, _stop)
    status = int(signal.SIGTERM)  # a wait status, reported if told to stop first: killed by SIGTERM
    try:
        _prctl(PR_SET_CHILD_SUBREAPER, 1)
        _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # admiss died before the death signal was armed
            raise _Stop
        try:
            # posix_spawnp, not subprocess: importing subprocess would double this script's
            # start-up time. Python ignores SIGPIPE and SIGXFSZ; the program gets the defaults.
            program = os.posix_spawnp(cmd[0], cmd, os.environ, setsigdef=(signal.SIGPIPE, signal.SIGXFSZ))
        except FileNotFoundError:
            sys.stderr.write(f"{token} program not found: {cmd[0]!r}\n")
            os._exit(CANNOT_START)
        except OSError as exc:
            sys.stderr.write(f"{token} cannot start {cmd[0]!r}: {exc.strerror or exc}\n")
            os._exit(CANNOT_START)
        # Hold neither pipe open: stdout closes when the program and its tree are gone.
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        status = os.waitpid(program, 0)[1]
    except _Stop:
        pass
    for number in STOP_SIGNALS:
        signal.signal(number, signal.SIG_IGN)  # cleaning up is not interrupted
    _kill_descendants()
    _exit_as(status)


if __name__ == "__main__":
    main(sys.argv)
