from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from otlp_receiver import Receiver  # noqa: E402


@pytest.fixture
def receiver():
    server = Receiver().start()
    yield server
    server.stop()
