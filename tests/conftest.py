import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto` (pyproject's addopts): one worker a core, two at most. The suite is
    measured and kept free of shared ports and folders at two workers; many of its tests
    start servers and subprocesses of their own, so more workers would mostly share the
    same cores among more processes."""
    # sched_getaffinity (the cores this process may use) is Linux's; elsewhere, the machine's.
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(2, cores))


@pytest.fixture(autouse=True, scope="session")
def _private_ir_cache(tmp_path_factory):
    """Compiled-IR cache files of this test run (and of the CLI runs it starts) go to a
    folder of its own, never into the user's cache."""
    os.environ["ADMISS_CACHE_DIR"] = str(tmp_path_factory.mktemp("ir-cache"))


@pytest.fixture(autouse=True, scope="session")
def _interpreter_on_path():
    """Rubrics here name `python` in CMD, and compiling checks the program is on PATH (E120):
    the interpreter running the tests comes first on PATH, as in an activated virtualenv."""
    os.environ["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])


@pytest.fixture(autouse=True, scope="session")
def _sigint_as_from_a_terminal():
    """A shell starts a background job with SIGINT ignored, and a process started with it
    ignored keeps ignoring it (as admiss does, rightly): the tests that send SIGINT to the
    processes they start would then wait for an exit that never comes. Those processes
    inherit SIGINT's disposition from this one, so it gets Python's usual handler back."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


class Ran:
    def __init__(self, proc: subprocess.CompletedProcess):
        self.code = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr


@pytest.fixture
def admiss_cli(tmp_path):
    """Run the real command line in a subprocess, in ``tmp_path``."""

    def run(*args: str, cwd: Path | None = None, stdin: str | None = None, env: dict[str, str] | None = None) -> Ran:
        """``env``: variables set for this run on top of the test's environment."""
        proc = subprocess.run(
            [sys.executable, "-m", "admiss", *map(str, args)],
            cwd=cwd or tmp_path,
            input=stdin,
            env={**os.environ, **env} if env else None,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return Ran(proc)

    return run
