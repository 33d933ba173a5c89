"""A receipt store whose rows another program damaged (a body that is not JSON, not text,
not an object): ``admiss receipts export`` names each such row and prints the rest (exit 2),
and ``GET /v1/receipts/{id}`` answers the documented 503. Real files, a real gateway."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import httpx

from admiss.receipts import open_store
from gatewaykit import GOOD, KEY, Gateway, prompt

# (id, body) rows as another program could write them: SQLite keeps any type in any column.
DAMAGED = [("rcpt_notjson", "{not json"), ("rcpt_number", 5), ("rcpt_array", "[1, 2]"),
           ("rcpt_blob", b"\x00\xff"), ("rcpt_deep", "[" * 100_000)]


def _receipt(receipt_id: str, created_at: str) -> dict:
    return {"id": receipt_id, "created_at": created_at,
            "chain": {"name": "c", "served": "a", "model_cost_usd": 0.0, "gate_cost_usd": 0.0}}


def _damage(path, rows=DAMAGED) -> None:
    db = sqlite3.connect(path)
    with db:
        db.executemany("INSERT INTO receipts VALUES (?, '2026-11-30T00:00:01.000Z', 'c', 'a', 'served', 0, 0, ?)",
                       rows)
    db.close()


def test_export_names_each_damaged_row_prints_the_rest_and_exits_2(tmp_path):
    path = tmp_path / "r.db"
    store = open_store(path)
    store.put_many([_receipt("rcpt_first", "2026-11-30T00:00:00.000Z"),
                    _receipt("rcpt_last", "2026-11-30T00:00:02.000Z")])
    store.close()
    _damage(path)
    ran = subprocess.run([sys.executable, "-m", "admiss", "receipts", "export", str(path)],
                         capture_output=True, text=True, timeout=60)
    assert ran.returncode == 2
    assert "Traceback" not in ran.stderr
    assert [json.loads(line)["id"] for line in ran.stdout.splitlines()] == ["rcpt_first", "rcpt_last"]
    warnings = ran.stderr.splitlines()
    assert len(warnings) == len(DAMAGED)
    for (receipt_id, _), warning in zip(DAMAGED, warnings):
        assert warning.startswith(f"{path}: warning: E155 receipt row '{receipt_id}' is damaged: ")
        assert warning.endswith("; skipped")


def test_reading_a_damaged_receipt_is_a_503(tmp_path, upstream):
    gateway = Gateway(tmp_path, upstream)
    try:
        _, text = prompt({"cheap": GOOD})
        reply = gateway.client().chat.completions.create(model="json", messages=[{"role": "user", "content": text}])
        good = reply.model_extra["admiss"]["receipt_id"]
        _damage(gateway.store_path)
        auth = {"authorization": f"Bearer {KEY}"}
        for receipt_id, _ in DAMAGED:
            read = httpx.get(f"{gateway.url}/v1/receipts/{receipt_id}", headers=auth)
            assert read.status_code == 503, read.text
            assert read.json()["error"]["code"] == "receipt_store_unavailable"
            assert receipt_id in read.json()["error"]["message"]
        assert httpx.get(f"{gateway.url}/v1/receipts/{good}", headers=auth).json()["id"] == good
    finally:
        assert gateway.stop() == 0, gateway.log.read_text()
    assert "Traceback" not in gateway.log.read_text()
