import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


class Ran:
    def __init__(self, proc: subprocess.CompletedProcess):
        self.code = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr


@pytest.fixture
def admiss_cli(tmp_path):
    """Run the real command line in a subprocess, in ``tmp_path``."""

    def run(*args: str, cwd: Path | None = None, stdin: str | None = None) -> Ran:
        proc = subprocess.run(
            [sys.executable, "-m", "admiss", *map(str, args)],
            cwd=cwd or tmp_path,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return Ran(proc)

    return run
