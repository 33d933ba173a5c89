"""Golden error messages: each tests/errors/NAME.rubric must fail with exactly NAME.expected.

Regenerate after an intended wording change with ``ADMISS_REGEN=1 pytest tests/test_errors_golden.py``
and review the diff: these files are what users read.
"""

import os
from pathlib import Path

import pytest

import admiss
from admiss.errors import AdmissError

HERE = Path(__file__).parent / "errors"
CASES = sorted(p.stem for p in HERE.glob("*.rubric"))


def _rendered(name: str) -> str:
    path = HERE / f"{name}.rubric"
    with pytest.raises(AdmissError) as caught:
        admiss.compile_source(path.read_text(encoding="utf-8"), path.name)
    return caught.value.render() + "\n"


@pytest.mark.parametrize("name", CASES)
def test_error_message_is_golden(name):
    expected = HERE / f"{name}.expected"
    rendered = _rendered(name)
    if os.environ.get("ADMISS_REGEN"):
        expected.write_text(rendered, encoding="utf-8")
    assert rendered == expected.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", CASES)
def test_error_code_is_named_in_the_file_name(name):
    code = name.split("_")[0].upper()
    if code.startswith("E"):
        assert f": {code} " in _rendered(name)
