"""An output that is one of the command's inputs is refused (exit 2, E006) before anything is
written, however the two are named: the same path, ./, a symlink, a hard link. Real
`admiss` processes on real files; the input's bytes are compared after each refusal."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from admiss.errors import InputError

RUBRIC = 'PROPERTY p "P" {\n  ADMIT verified_external_source\n}\n'


def _names_for_the_same_file(folder: Path) -> dict[str, str]:
    (folder / "link.rubric").symlink_to("r.rubric")
    os.link(folder / "r.rubric", folder / "hard.rubric")
    (folder / "sub").mkdir()
    return {"same path": "r.rubric", "./": "./r.rubric", "..": "sub/../r.rubric",
            "symlink": "link.rubric", "hard link": "hard.rubric"}


@pytest.mark.parametrize("how", ["same path", "./", "..", "symlink", "hard link"])
def test_compile_never_writes_over_its_source(admiss_cli, tmp_path, how):
    source = tmp_path / "r.rubric"
    source.write_text(RUBRIC)
    output = _names_for_the_same_file(tmp_path)[how]
    ran = admiss_cli("compile", "r.rubric", "-o", output)
    assert ran.code == 2, ran.out
    assert ran.err.startswith(f"{Path(output)}: E006 is one of the command's inputs")
    assert "admiss never writes over an input" in ran.err and "Traceback" not in ran.err
    assert source.read_text() == RUBRIC and not list(tmp_path.glob(".*.tmp"))


def test_compile_writes_another_file_and_a_link_to_a_new_one(admiss_cli, tmp_path):
    (tmp_path / "r.rubric").write_text(RUBRIC)
    (tmp_path / "dangling.json").symlink_to("ir.json")
    assert admiss_cli("compile", "r.rubric", "-o", "out.json").code == 0
    assert admiss_cli("compile", "r.rubric", "-o", "dangling.json").code == 0
    assert (tmp_path / "ir.json").read_text() == (tmp_path / "out.json").read_text()
    assert (tmp_path / "r.rubric").read_text() == RUBRIC


def test_a_ray_run_never_writes_its_outputs_over_a_bundle_or_its_rubric(tmp_path):
    # Refused before Ray is asked for anything: no cluster is started here.
    ray_module = pytest.importorskip("admiss.ray")
    out = tmp_path / "out"
    out.mkdir()
    bundles = out / "reports.jsonl"
    bundles.write_text('{"evidence": []}\n')
    rubric = tmp_path / "r.rubric"
    rubric.write_text(RUBRIC)
    for given in (str(bundles), str(out / "*.jsonl"), [str(out / "./reports.jsonl")]):
        with pytest.raises(InputError) as caught:
            ray_module.check_dataset(given, rubric, out)
        assert f"{bundles}: E006 is one of the command's inputs" in caught.value.render()
    (out / "summary.json").symlink_to(rubric)
    with pytest.raises(InputError) as caught:
        ray_module.check_dataset(str(tmp_path / "none.jsonl"), rubric, out)
    assert f"{out / 'summary.json'}: E006 is one of the command's inputs (the input {rubric})" in caught.value.render()
    assert bundles.read_text() == '{"evidence": []}\n' and rubric.read_text() == RUBRIC
