from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

import pytest

# Keep the helper modules importable whatever pytest's import mode.
sys.path.insert(0, str(Path(__file__).parent))

from chat_server import ChatServer  # noqa: E402

from admiss.config import Config, Price, ProviderConfig  # noqa: E402
from admiss.gates.base import GateContext  # noqa: E402


@pytest.fixture
def chat_server():
    server = ChatServer().start()
    yield server
    server.stop()


@pytest.fixture
def local_ctx(tmp_path: Path, chat_server: ChatServer) -> Callable[..., GateContext]:
    """Make a context whose provider ``local`` is the chat server; local/judge and local/maker are priced."""

    def make(timeout_s: float = 5.0, max_retries: int = 2, api_key_env: str | None = None) -> GateContext:
        provider = ProviderConfig("local", chat_server.url, api_key_env, timeout_s, max_retries)
        prices = {"local/judge": Price(1.0, 2.0), "local/maker": Price(0.5, 1.0)}
        return GateContext(tmp_path, Config(providers={"local": provider}, prices=prices))

    return make
