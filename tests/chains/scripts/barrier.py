"""Mark this gate started in folder argv[1], then wait for argv[2] markers in all.

Passes only when the other gates on the rung were started alongside it: run one after the
other, the first would wait alone and fail. This proves concurrency without timing it.
"""
import json
import sys
import time
from pathlib import Path

folder, expected, name = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
sys.stdin.read()
(folder / f"{name}.started").write_text("")
deadline = time.monotonic() + 10
while len(list(folder.glob("*.started"))) < expected:
    if time.monotonic() > deadline:
        print(json.dumps({"verdict": "fail", "reason": f"{name} ran alone"}))
        sys.exit(0)
    time.sleep(0.01)
time.sleep(0.5)
print(json.dumps({"verdict": "pass", "reason": f"{name} ran alongside the others"}))
