"""One real PostgreSQL server for the session (pgkit.py), a fresh database per test."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "serve"))
sys.path.insert(0, str(Path(__file__).parent.parent / "gates"))

import pgkit  # noqa: E402


@pytest.fixture(scope="session")
def postgres():
    folder = pgkit.binaries()
    if folder is None:
        reason = ("PostgreSQL's initdb and pg_ctl were not found (Debian: apt-get install postgresql; or set "
                  "ADMISS_PG_BIN)")
        if os.environ.get("ADMISS_REQUIRE_POSTGRES"):
            pytest.fail(f"ADMISS_REQUIRE_POSTGRES is set, but {reason}")
        pytest.skip(reason)
    server = pgkit.PostgresServer(folder)
    yield server
    server.close()


@pytest.fixture
def pg_url(postgres) -> str:
    """A postgresql:// URL (with its password) of an empty database of its own."""
    return postgres.database()
