"""Record that this gate started (touch argv[1]), then print argv[2] as the verdict.

With argv[3], first wait (up to 10 s) for that file to exist, so a test can order events.
"""
import sys
import time
from pathlib import Path

Path(sys.argv[1]).write_text("started")
sys.stdin.read()
if len(sys.argv) > 3:
    deadline = time.monotonic() + 10
    while not Path(sys.argv[3]).exists() and time.monotonic() < deadline:
        time.sleep(0.01)
print(sys.argv[2])
