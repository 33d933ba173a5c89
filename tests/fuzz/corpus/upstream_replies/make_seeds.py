"""Writes the upstream-reply seeds: the bodies tests/gates/chat_server.py (the stand-in
upstream every gateway test talks to) sends, with the fuzz key put where a hostile
upstream would echo it. Run from this folder: python make_seeds.py"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[3] / "gates"))

from chat_server import completion  # noqa: E402

KEY = "sk-fuzz-provider-key-0123456789"  # tests/fuzz/test_fuzz.py's FUZZ_KEY

SEEDS = {
    "completion.json": completion('{"answer": 42}').body,
    "echoed_key.json": completion(f'{{"key": "Bearer {KEY}"}}').body,
    "absurd_usage.json": completion("ok", prompt_tokens=2 * 10**18, completion_tokens=5).body,
    "no_usage.json": completion("ok", prompt_tokens=None).body,
    "error_echo.json": {"error": {"message": "x" * 185 + f"Bearer {KEY}"}},
    "not_a_completion.json": {"object": "list", "data": [f"Bearer {KEY}"]},
}

for name, body in SEEDS.items():
    Path(name).write_text(json.dumps(body) + "\n")
