"""A real PostgreSQL server for the tests: Debian's binaries (initdb, pg_ctl), a data folder
of its own in /tmp, 127.0.0.1 on a free port, password authentication over TCP.

PostgreSQL refuses to run as root, so as root the server runs as the ``postgres`` user
(made, as a system user, when missing), through ``runuser``. ``.ci/run`` installs the
package; a local run without it skips, unless ADMISS_REQUIRE_POSTGRES is set.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import psycopg

USER = "admiss"
# Long enough for redact's known-secret masking; the tests look for it in every output.
PASSWORD = "pg-Secret-0123456789"
SERVER_USER = "postgres"


def binaries() -> Path | None:
    """The folder of initdb and pg_ctl: ADMISS_PG_BIN, else Debian's newest, else the PATH's."""
    given = os.environ.get("ADMISS_PG_BIN")
    candidates = [given] if given else sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_major, reverse=True)
    found = shutil.which("initdb")
    candidates += [str(Path(found).parent)] if found else []
    return next((Path(c) for c in candidates if c and (Path(c) / "initdb").exists() and (Path(c) / "pg_ctl").exists()),
                None)


def _major(folder: str) -> int:
    version = Path(folder).parent.name
    return int(version) if version.isdigit() else 0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PostgresServer:
    """One server for the test session; :meth:`database` makes a fresh database per test."""

    def __init__(self, bin_folder: Path, fsync: bool = False, settings: dict[str, str] | None = None):
        """``fsync``: the server's own default durability (benchmarks); off for the tests,
        which check what the gateway commits and when, not the server's crash safety, on a
        disk the machine shares. ``settings``: more of the server's settings (name: value)."""
        self.bin = bin_folder
        self.fsync = fsync
        self.settings = settings or {}
        self.as_root = os.geteuid() == 0
        if self.as_root:
            _ensure_user(SERVER_USER)
        self.folder = Path(tempfile.mkdtemp(prefix="admiss-pg-"))
        self.data = self.folder / "data"
        self.log = self.folder / "server.log"
        pwfile = self.folder / "pw"
        pwfile.write_text(PASSWORD + "\n")
        if self.as_root:
            entry = pwd.getpwnam(SERVER_USER)
            os.chown(self.folder, entry.pw_uid, entry.pw_gid)
            os.chown(pwfile, entry.pw_uid, entry.pw_gid)
        self.port = _free_port()
        self._run("initdb", "-D", str(self.data), "-U", USER, "--pwfile", str(pwfile), "--auth-host=scram-sha-256",
                  "--auth-local=trust", "-E", "UTF8", "--no-sync")
        pwfile.unlink()
        self.start()

    def _run(self, tool: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        command = [str(self.bin / tool), *args]
        if self.as_root:
            command = ["runuser", "-u", SERVER_USER, "--", *command]
        return subprocess.run(command, capture_output=True, text=True, check=check, timeout=120)

    def start(self) -> None:
        options = (f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.folder} -c max_connections=200"
                   f" -c fsync={'on' if self.fsync else 'off'}"
                   + "".join(f" -c {name}={value}" for name, value in self.settings.items()))
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        """Stop the server; ``immediate`` is as abrupt as a crash (no checkpoint, clients cut off)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def url(self, database: str, password: str = PASSWORD) -> str:
        return f"postgresql://{USER}:{password}@127.0.0.1:{self.port}/{database}"

    def database(self) -> str:
        """The URL of a new, empty database."""
        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def close(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop", check=False)
        shutil.rmtree(self.folder, ignore_errors=True)


def _ensure_user(name: str) -> None:
    try:
        pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True)


def wait_until(predicate, timeout_s: float = 30.0, every_s: float = 0.1):
    """``predicate()``'s first true value within ``timeout_s``; AssertionError when none came."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every_s)
    raise AssertionError(f"not within {timeout_s}s")
