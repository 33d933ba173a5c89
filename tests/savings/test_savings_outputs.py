"""`admiss savings --html FILE` never writes the page over one of its inputs: a receipt store,
exported receipts, or the admiss.toml it reads prices from (exit 2, E006, nothing written)."""

from __future__ import annotations

import os

import pytest
from savings_receipts import PRICES, receipts, write_jsonl, write_store


@pytest.mark.parametrize("page", ["receipts.db", "./receipts.db", "store-link.db", "store-hard.db", "exported.jsonl",
                                  "admiss.toml"])
def test_the_page_is_never_written_over_an_input(admiss_cli, tmp_path, page):
    (tmp_path / "admiss.toml").write_text(PRICES)
    store = write_store(tmp_path / "receipts.db", receipts())
    write_jsonl(tmp_path / "exported.jsonl", receipts()[:2])
    (tmp_path / "store-link.db").symlink_to("receipts.db")
    os.link(store, tmp_path / "store-hard.db")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file() and not p.is_symlink()}
    ran = admiss_cli("savings", "receipts.db", "exported.jsonl", "--config", "admiss.toml", "--html", page)
    assert ran.code == 2 and ran.out == ""
    assert "E006 is one of the command's inputs" in ran.err and "Traceback" not in ran.err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file() and not p.is_symlink()} == before


def test_the_page_is_written_beside_its_inputs(admiss_cli, tmp_path):
    (tmp_path / "admiss.toml").write_text(PRICES)
    write_store(tmp_path / "receipts.db", receipts())
    ran = admiss_cli("savings", "receipts.db", "--html", "savings.html")
    assert ran.code == 0, ran.err
    assert (tmp_path / "savings.html").read_text().startswith("<!DOCTYPE html>")
