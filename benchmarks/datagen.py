"""Deterministic benchmark data: property specs, rubric source for them, and bundles.

Every engine under test (admiss, the hand-written baseline, the peers) is built from the
same ``PropertyData`` and fed the same bundles, so their answers can be compared item by item.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

TRUSTED_KINDS = ("procedurally_sound_tool_call", "verified_external_source")
UNTRUSTED_KINDS = ("final_answer", "reasoning_trace", "summary", "interpretation", "flawed_tool_call")
ALL_KINDS = TRUSTED_KINDS + UNTRUSTED_KINDS
SEED_SHORTCUTS = ("8-K press-release exhibit", "earnings recap", "news article")
# Labels a trusted item may carry: the seed's shortcuts and the filings it accepts.
TRUSTED_LABELS = SEED_SHORTCUTS + ("10-K filing", "10-Q filing")


@dataclass(frozen=True)
class PropertyData:
    name: str
    title: str
    admit: tuple[str, ...]
    forbid: tuple[str, ...]
    shortcuts: tuple[str, ...]


def property_data(index: int) -> PropertyData:
    """The index-th generated property; index 0 is the seed's named_operator property.

    The rotation varies which kinds are admitted and which untrusted kind is left neither
    admitted nor forbidden, so that every exclusion reason occurs across properties.
    """
    admit = TRUSTED_KINDS if index % 3 == 2 else ("verified_external_source",)
    left_out = None if index % 4 == 0 else UNTRUSTED_KINDS[index % 5]
    forbid = tuple(k for k in UNTRUSTED_KINDS if k != left_out)
    shortcuts = SEED_SHORTCUTS if index % 2 == 0 else SEED_SHORTCUTS + (f"lookalike {index}",)
    title = f"Property {index} rests on a 10-K or 10-Q filing"
    return PropertyData(f"p{index}", title, admit, forbid, shortcuts)


def properties(count: int) -> list[PropertyData]:
    return [property_data(i) for i in range(count)]


def _quoted(text: str) -> str:
    # JSON string escapes are the rubric language's string escapes.
    return json.dumps(text, ensure_ascii=False)


def property_source(prop: PropertyData) -> str:
    shortcuts = ", ".join(_quoted(s) for s in prop.shortcuts)
    return (
        f"PROPERTY {prop.name} {_quoted(prop.title)} {{\n"
        f"  ADMIT {', '.join(prop.admit)}\n"
        f"  FORBID {', '.join(prop.forbid)}\n"
        f"  REJECT SHORTCUT {shortcuts}\n"
        f"  DEFAULT no\n"
        f"}}\n"
    )


def rubric_source(props: list[PropertyData], name: str = "bench", title: str = "Generated benchmark rubric") -> str:
    """Rubric source declaring ``props`` in order."""
    header = f"RUBRIC {name} {_quoted(title)}\n\n"
    return header + "\n".join(property_source(p) for p in props)


def evidence_item(index: int, rng: random.Random) -> dict:
    """One evidence item with a unique detail, so reports can be matched back to items."""
    kind = rng.choice(ALL_KINDS)
    label = rng.choice(TRUSTED_LABELS) if kind in TRUSTED_KINDS else kind
    return {"kind": kind, "detail": f"item {index}: {kind} citing {label}", "source_label": label}


def evidence(count: int, rng: random.Random) -> list[dict]:
    return [evidence_item(i, rng) for i in range(count)]


def bundle(items: int, rng: random.Random) -> dict:
    """A bundle whose every item is offered to every property."""
    return {"evidence": evidence(items, rng)}


def targeted_bundle(items: int, rng: random.Random, props: list[PropertyData], number: int) -> dict:
    """A batch bundle: a fifth of its items name the one property they are offered to."""
    items_out = evidence(items, rng)
    for item in items_out:
        if rng.random() < 0.2:
            item["property"] = rng.choice(props).name
    return {"prompt": f"bundle {number}", "evidence": items_out, "meta": {"number": number}}


def targeted_bundles(count: int, items: int, props: list[PropertyData], seed: int = 5) -> Iterator[dict]:
    rng = random.Random(seed)
    for number in range(count):
        yield targeted_bundle(items, rng, props, number)


def write_jsonl(path: Path, bundles: Iterator[dict]) -> int:
    """Write one bundle per line; returns how many were written."""
    count = 0
    with path.open("w", encoding="utf-8") as out:
        for b in bundles:
            out.write(json.dumps(b, ensure_ascii=False))
            out.write("\n")
            count += 1
    return count
