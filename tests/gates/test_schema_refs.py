"""The schema gate fetches nothing the rubric did not name: a $ref resolves inside the
schema or to a JSON file in the rubric's folder; anything else is E160 at the rubric's FILE
string, when the rubric's gates are built. The HTTP server here is real and counts requests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from raw_server import CountingServer

import admiss
from admiss.errors import InputError

RUBRIC = 'CHAIN c {\n  GATE schema FILE "s.json" ON ABSTAIN fail_closed\n}\n'


@pytest.fixture
def counting_server():
    server = CountingServer().start()
    yield server
    server.stop()


def _write(folder: Path, schema: dict, **files: dict) -> Path:
    (folder / "s.json").write_text(json.dumps(schema))
    for name, document in files.items():
        target = folder / name.replace("__", "/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(document))
    (folder / "r.rubric").write_text(RUBRIC)
    return folder / "r.rubric"


def _refused(path: Path) -> InputError:
    with pytest.raises(InputError) as caught:
        admiss.load(path).check({"output": '{"a": "x"}'})
    return caught.value


def _located_at_the_file_string(error: InputError, rubric: Path, ref: str) -> None:
    [diagnostic] = error.diagnostics
    assert (diagnostic.code, diagnostic.file, diagnostic.span.line, diagnostic.span.column) == (
        "E160", str(rubric), 2, 20)
    assert f"$ref {ref!r} is not resolved" in diagnostic.message


def test_an_http_ref_is_an_error_and_nothing_is_requested(tmp_path, counting_server):
    ref = f"{counting_server.url}/remote.json"
    rubric = _write(tmp_path, {"type": "object", "properties": {"a": {"$ref": ref}}})
    _located_at_the_file_string(_refused(rubric), rubric, ref)
    assert counting_server.requests == []


def test_admiss_check_exits_2_with_the_located_error_and_makes_no_request(tmp_path, counting_server):
    ref = f"{counting_server.url}/remote.json#/x"
    rubric = _write(tmp_path, {"$defs": {"a": {"$ref": ref}}, "$ref": "#/$defs/a"})
    (tmp_path / "b.json").write_text(json.dumps({"output": '"x"'}))
    done = subprocess.run([sys.executable, "-m", "admiss", "check", "b.json", "-r", str(rubric)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith(f"{rubric}:2:20: E160 schema s.json: $ref {ref!r} is not resolved")
    assert "Traceback" not in done.stderr
    assert counting_server.requests == []


def test_an_id_naming_a_server_does_not_make_relative_refs_remote(tmp_path, counting_server):
    rubric = _write(tmp_path, {"$id": f"{counting_server.url}/root.json", "$ref": "defs.json"},
                    **{"defs.json": {"type": "string", "maxLength": 3}})
    checked = admiss.load(rubric)
    gates = [checked.check({"output": json.dumps(o)}).to_dict()["chain"]["rungs"][0]["gates"][0]["verdict"]
             for o in ("abc", "abcd")]
    assert gates == ["pass", "fail"]
    assert counting_server.requests == []


@pytest.mark.parametrize("how", ["file-uri", "absolute-path", "dot-dot", "symlink-out"])
def test_a_ref_to_a_file_outside_the_rubrics_folder_is_an_error(tmp_path, how):
    folder, outside = tmp_path / "rubrics", tmp_path / "secret.json"
    folder.mkdir()
    outside.write_text('{"type": "string"}')
    (folder / "link.json").symlink_to(outside)
    ref = {"file-uri": outside.as_uri(), "absolute-path": str(outside), "dot-dot": "../secret.json",
           "symlink-out": "link.json"}[how]
    rubric = _write(folder, {"$ref": ref})
    _located_at_the_file_string(_refused(rubric), rubric, ref)


def test_a_ref_to_a_device_is_an_error(tmp_path):
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    rubric = _write(tmp_path, {"$ref": "zero.json"})
    error = _refused(rubric)
    assert "is outside the rubric's folder" in error.diagnostics[0].message


def test_refs_to_files_beside_the_rubric_resolve_transitively(tmp_path):
    rubric = _write(tmp_path, {"type": "object", "properties": {"item": {"$ref": "sub/item.json#/$defs/item"}}},
                    **{"sub__item.json": {"$defs": {"item": {"$ref": "price.json"}}},
                       "sub__price.json": {"type": "number", "minimum": 0}})
    checked = admiss.load(rubric)
    verdicts = [checked.check({"output": json.dumps({"item": v})}).to_dict()["chain"]["rungs"][0]["gates"][0]
                for v in (3, -1)]
    assert [v["verdict"] for v in verdicts] == ["pass", "fail"]
    assert "$.item: -1 is less than the minimum of 0" in verdicts[1]["reason"]


def test_a_missing_file_beside_the_rubric_is_an_error_when_the_gates_are_built(tmp_path):
    rubric = _write(tmp_path, {"$ref": "nope.json"})
    error = _refused(rubric)
    assert f"schema file not found: {tmp_path / 'nope.json'}" in error.diagnostics[0].message


@pytest.mark.parametrize("ref", ["a\u0000b.json", "http://[::1", "defs.json\u0000../../etc/passwd", "loop.json",
                                 "x" * 5000 + ".json"])
def test_a_ref_that_is_no_readable_address_is_an_error_not_a_crash(tmp_path, ref):
    (tmp_path / "loop.json").symlink_to("loop.json")
    rubric = _write(tmp_path, {"$ref": ref})
    [diagnostic] = _refused(rubric).diagnostics
    assert diagnostic.code == "E160"
    assert "not an address admiss can read" in diagnostic.message


@pytest.mark.parametrize("depth", [5_000, 100_000])
def test_a_schema_nested_too_deeply_is_an_error_not_a_crash(tmp_path, depth):
    (tmp_path / "s.json").write_text('{"items": ' * depth + "{}" + "}" * depth)
    (tmp_path / "r.rubric").write_text(RUBRIC)
    (tmp_path / "b.json").write_text(json.dumps({"output": "[]"}))
    done = subprocess.run([sys.executable, "-m", "admiss", "check", "b.json", "-r", "r.rubric"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "nested too deeply" in done.stderr and "Traceback" not in done.stderr
