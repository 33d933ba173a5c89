"""The public JUnit XML schema the JUnit tests validate against, and where it is found.

The schema is the Apache Ant JUnit schema published by Windy Road
(https://github.com/windyroad/JUnit-Schema, JUnit.xsd, Apache License 2.0), the one Jenkins
and most JUnit readers follow. It is not copied into this repository: the tests read it
from ``$ADMISS_JUNIT_XSD``, from ``shared/junit/JUnit.xsd`` beside the repository, or from a
snapshot of that repository on this machine, and are skipped (saying so) when none is there.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_SNAPSHOT = Path("/work/.mirror/windyroad+JUnit-Schema/repo")


def schema_text() -> str | None:
    named = os.environ.get("ADMISS_JUNIT_XSD")
    for path in filter(None, [named and Path(named), ROOT.parent / "shared" / "junit" / "JUnit.xsd"]):
        if path.is_file():
            return path.read_text(encoding="utf-8")
    if _SNAPSHOT.is_dir():
        shown = subprocess.run(["git", "--git-dir", str(_SNAPSHOT), "show", "HEAD:JUnit.xsd"],
                               capture_output=True, text=True)
        if shown.returncode == 0:
            return shown.stdout
    return None


def junit_schema():
    """The schema as an ``xmlschema`` validator, or the test is skipped."""
    xmlschema = pytest.importorskip("xmlschema")
    text = schema_text()
    if text is None:
        pytest.skip("the Windy Road JUnit.xsd is not on this machine (set ADMISS_JUNIT_XSD)")
    return xmlschema.XMLSchema(text)
