"""The JSON I/O floor for the batch benchmark: parse and re-serialise every line of a JSONL file.

Run as a script: ``python json_floor.py BUNDLES.jsonl > OUT.jsonl``. Uses orjson (the
fastest JSON library available here) and falls back to the standard library without it.
"""

from __future__ import annotations

import sys


def copy_lines(path: str) -> None:
    try:
        import orjson

        loads, dumps = orjson.loads, orjson.dumps
    except ImportError:
        import json

        loads, dumps = json.loads, lambda obj: json.dumps(obj).encode()
    out = sys.stdout.buffer
    with open(path, "rb") as lines:
        for line in lines:
            out.write(dumps(loads(line)))
            out.write(b"\n")


if __name__ == "__main__":
    copy_lines(sys.argv[1])
