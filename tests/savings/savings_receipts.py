"""Receipts as the gateway stores them, built by hand for the savings tests: a real SQLite
store with the receipt table, and the same bodies as exported JSON Lines."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS receipts (
  id TEXT PRIMARY KEY, created_at TEXT NOT NULL, chain TEXT NOT NULL, served_rung TEXT,
  outcome TEXT NOT NULL, model_cost_usd REAL NOT NULL, gate_cost_usd REAL NOT NULL,
  body TEXT NOT NULL
);
"""

DRAFT, STRONG = "openai/gpt-5-mini", "anthropic/claude-sonnet-5"
# Prices of the top model, in the admiss.toml the tests write: $3 in, $15 out per million tokens.
PRICES = f'[prices."{STRONG}"]\ninput_usd_per_mtok = 3.0\noutput_usd_per_mtok = 15.0\n'


def gate(kind: str, verdict: str, cost: float = 0.0) -> dict:
    effective = "pass" if verdict == "abstain" else verdict
    return {"gate": kind, "verdict": verdict, "effective": effective, "score": None, "reason": "",
            "duration_ms": 1.0, "gate_cost_usd": cost, "disabled": False}


def rung(name: str, model: str, cost: float, outcome: str, gates: list[dict]) -> dict:
    return {"rung": name, "model": model, "cost_usd": cost, "outcome": outcome, "gates": gates}


def usage(name: str, model: str, purpose: str, prompt: int | None, completion: int | None, cost: float) -> dict:
    return {"rung": name, "model": model, "purpose": purpose, "prompt_tokens": prompt,
            "completion_tokens": completion, "cost_usd": cost}


def receipt(number: int, rungs: list[dict], calls: list[dict], chain: str = "serve") -> dict:
    served = next((r["rung"] for r in rungs if r["outcome"] == "served"), None)
    return {
        "id": f"r{number}", "request_id": f"req-{number}", "created_at": f"2026-11-30T10:00:{number:02d}Z",
        "chain": {"name": chain, "served": served, "rungs": rungs,
                  "model_cost_usd": sum(r["cost_usd"] for r in rungs),
                  "gate_cost_usd": sum(g["gate_cost_usd"] for r in rungs for g in r["gates"])},
        "usage": calls, "latency_ms": {r["rung"]: 10.0 for r in rungs}, "total_latency_ms": 12.0,
        "top_rung": {"rung": "strong", "model": STRONG},
    }


def receipts() -> list[dict]:
    """Four requests: a draft serves (tokens known); a draft serves (no token counts); one
    escalates to the strong rung, whose judge costs gate money; one exhausts the chain."""
    return [
        receipt(1, [rung("draft", DRAFT, 0.0004, "served", [gate("non_empty", "pass"), gate("json_valid", "pass")])],
                [usage("draft", DRAFT, "rung", 1000, 200, 0.0004)]),
        receipt(2, [rung("draft", DRAFT, 0.0003, "served", [gate("non_empty", "pass"), gate("json_valid", "pass")])],
                [usage("draft", DRAFT, "rung", None, None, 0.0003)]),
        receipt(3, [rung("draft", DRAFT, 0.0005, "escalated", [gate("non_empty", "pass"), gate("json_valid", "fail")]),
                    rung("strong", STRONG, 0.0125, "served", [gate("non_empty", "pass"), gate("judge", "pass", 0.002)])],
                [usage("draft", DRAFT, "rung", 1200, 300, 0.0005), usage("strong", STRONG, "rung", 1300, 400, 0.0125),
                 usage("strong", "openai/gpt-5", "judge", 500, 20, 0.002)]),
        receipt(4, [rung("draft", DRAFT, 0.0004, "escalated", [gate("non_empty", "fail"), gate("json_valid", "skipped")]),
                    rung("strong", STRONG, 0.011, "exhausted", [gate("non_empty", "pass"), gate("judge", "abstain", 0.001)])],
                [usage("draft", DRAFT, "rung", 900, 0, 0.0004), usage("strong", STRONG, "rung", 900, 350, 0.011),
                 usage("strong", "openai/gpt-5", "judge", 400, 30, 0.001)]),
    ]


def write_store(path: Path, bodies: list[dict | str]) -> Path:
    """A receipt store holding ``bodies`` (a str body is stored as written, to break it)."""
    connection = sqlite3.connect(path)
    with connection:
        connection.executescript(SCHEMA)
        for number, body in enumerate(bodies, start=1):
            parsed = body if isinstance(body, dict) else {}
            chain = parsed.get("chain") or {}
            connection.execute(
                "INSERT INTO receipts VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (parsed.get("id", f"bad{number}"), f"2026-11-30T10:00:{number:02d}Z", chain.get("name", "serve"),
                 chain.get("served"), "served" if chain.get("served") else "exhausted",
                 chain.get("model_cost_usd", 0.0), chain.get("gate_cost_usd", 0.0),
                 body if isinstance(body, str) else json.dumps(body)))
    connection.close()
    return path


def write_jsonl(path: Path, bodies: list[dict]) -> Path:
    path.write_text("".join(json.dumps(b) + "\n" for b in bodies), encoding="utf-8")
    return path
