"""Reading a bundle: admiss's parse (with its repeated-key check) against the bare decoder.

parse_bundle_text decodes with orjson (when installed) and then proves the bundle has no
repeated key with two C-speed counts (docs/security.md); this section shows what that
costs per bundle, against orjson.loads (or json.loads) on the same text in the same run.
"""

from __future__ import annotations

import json
import random

from admiss.bundle import parse_bundle_text
from benchmarks import datagen
from benchmarks.settings import Settings
from benchmarks.tables import print_section, print_table, ratio_text, seconds_text
from benchmarks.timing import time_call

SIZES = (5, 50, 500)


def _bare_decoder():
    try:
        import orjson

        return "orjson.loads", orjson.loads
    except ImportError:
        return "json.loads", json.loads


def run(settings: Settings) -> None:
    name, decode = _bare_decoder()
    print_section(f"parse: admiss.bundle.parse_bundle_text vs {name}")
    rng = random.Random(11)
    rows = []
    for items in SIZES:
        bundle = datagen.bundle(items, rng)
        # A candidate whose output is JSON: colons in strings, as real chain bundles have.
        bundle["candidates"] = [{"rung": "draft", "output": json.dumps({"operator": "x", "url": "https://sec.gov"})}]
        text = json.dumps(bundle)
        bare = time_call(lambda: decode(text), settings.repeats, settings.min_repeat_seconds).best
        ours = time_call(lambda: parse_bundle_text(text, "b.json"), settings.repeats, settings.min_repeat_seconds).best
        rows.append([f"{items} items ({len(text):,} bytes)", seconds_text(bare), seconds_text(ours), ratio_text(ours / bare)])
    print_table("per bundle (best of repeats)", ["bundle", name, "parse_bundle_text", "ratio"], rows)
