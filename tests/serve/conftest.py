"""One real ``admiss serve`` process for the whole session, in front of a fake upstream (a
real HTTP server on 127.0.0.1 that logs every call); see gatewaykit.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# Keep the helper modules importable whatever pytest's import mode.
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "gates"))

from chat_server import ChatServer, scripted_by_prompt  # noqa: E402
from gatewaykit import Gateway  # noqa: E402


@pytest.fixture(scope="session")
def upstream():
    server = ChatServer(route=scripted_by_prompt, keep_alive=True).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def gateway(tmp_path_factory, upstream):
    gw = Gateway(tmp_path_factory.mktemp("gateway"), upstream)
    yield gw
    assert gw.stop() == 0, gw.log.read_text()
