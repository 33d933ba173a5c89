"""admiss.ray on a real local Ray instance (one per test session): the reports are the
single-process output line for line, with Parquet rows and a summary beside them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

ray = pytest.importorskip("ray")
pq = pytest.importorskip("pyarrow.parquet")

from admiss.ray import check_dataset  # noqa: E402
from test_seed import SHORTCUT, STRICT, TEN_K  # noqa: E402


@pytest.fixture(scope="session")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
             _node_ip_address="127.0.0.1")  # loopback only
    yield
    ray.shutdown()


def test_reports_are_the_single_process_output_line_for_line(local_ray, tmp_path):
    (tmp_path / "sec.rubric").write_text(STRICT)
    lines = [json.dumps({"evidence": [dict(TEN_K if n % 3 else SHORTCUT, detail=f"item {n} " + "x" * 40)]})
             for n in range(1500)]
    lines[7] = "{cut off"
    lines[700] = ""
    lines[900] = b'{"prompt": "caf\xe9"}'.decode("latin-1")
    (tmp_path / "a.jsonl").write_text("\n".join(lines) + "\n", encoding="latin-1")
    (tmp_path / "b.jsonl").write_text("\n".join(lines[:50]))
    (tmp_path / "empty.jsonl").write_text("\n\n")
    inputs = [str(tmp_path / name) for name in ("a.jsonl", "empty.jsonl", "b.jsonl")]
    single = subprocess.run([sys.executable, "-m", "admiss", "check", "--rubric", str(tmp_path / "sec.rubric"),
                             "--format", "json", *inputs], capture_output=True, timeout=120)
    errors: list[str] = []

    class Errors:
        write = errors.append

    summary = check_dataset(inputs, tmp_path / "sec.rubric", tmp_path / "out", concurrency=2, errors=Errors)
    written = (tmp_path / "out" / "reports.jsonl").read_bytes()
    assert written.splitlines() == single.stdout.splitlines() and len(written.splitlines()) == 1550
    assert "".join(errors).encode() == single.stderr
    verdicts = [json.loads(line).get("verdict", "error") for line in written.splitlines()]
    assert summary["by_verdict"] == {v: verdicts.count(v) for v in ("pass", "fail", "error")}
    assert summary["by_verdict"]["error"] == 4  # the cut-off line twice, the non-UTF-8 line, the empty file
    assert json.loads((tmp_path / "out" / "summary.json").read_text()) == summary
    rows = pq.read_table(tmp_path / "out" / "properties.parquet").to_pylist()
    assert len(rows) == 1550 and {r["bundle_verdict"] for r in rows} == {"pass", "fail", "error"}
    shortcut = sum(r["shortcut_rejected"] for r in rows)
    assert shortcut == summary["by_exclusion_reason"]["shortcut-rejected"] > 0


def test_parquet_columns_keep_their_types_when_no_bundle_could_be_checked(local_ray, tmp_path):
    # Every row of this run is an error row (property, verdict None): its files must still
    # carry string columns, or a folder mixing them with checked bundles cannot be read.
    (tmp_path / "sec.rubric").write_text(STRICT)
    (tmp_path / "bad.jsonl").write_text("{cut off\n[1]\n")
    check_dataset([str(tmp_path / "bad.jsonl")], tmp_path / "sec.rubric", tmp_path / "out", concurrency=1)
    files = sorted((tmp_path / "out" / "properties.parquet").glob("*.parquet"))
    assert files and all(pq.read_schema(f).field(name).type == "string"
                         for f in files for name in ("property", "verdict", "error_code"))


def test_the_cli_says_what_ray_needs(admiss_cli, tmp_path):
    ran = admiss_cli("check", "--ray", "local", "x.jsonl")
    assert ran.code == 2 and "--ray ADDRESS, -o OUTDIR and --rubric FILE go together" in ran.err


def test_ray_is_quiet_by_default_and_errors_still_show(admiss_cli, tmp_path):
    # One real `admiss check --ray local` run: Ray printed some 60 INFO, progress and
    # core_worker.cc lines for a handful of bundles; only admiss's own error may remain.
    (tmp_path / "sec.rubric").write_text(STRICT)
    (tmp_path / "b.jsonl").write_text(json.dumps({"evidence": [TEN_K]}) + "\n"
                                      + json.dumps({"evidence": [SHORTCUT]}) + "\nnot json\n")
    ran = admiss_cli("check", "--ray", "local", "--rubric", "sec.rubric", "-o", "out", "b.jsonl")
    assert ran.code == 2, ran.err
    assert ran.err == ("b.jsonl:3:1: B001 invalid JSON: Expecting value\n  not json\n  ^\n"
                       "  hint: a bundle is one JSON object (a .jsonl file: one per line)\n")
    assert len((tmp_path / "out" / "reports.jsonl").read_text().splitlines()) == 3
