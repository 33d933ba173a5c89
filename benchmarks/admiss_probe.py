"""What of admiss exists in this checkout, and how to reach it.

The benchmarks are written against the documented contract; parts that have not landed
yet are reported as "not available" instead of failing the run.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

from benchmarks.datagen import PropertyData, rubric_source


@lru_cache(maxsize=1)
def api() -> ModuleType | None:
    """The admiss package when it offers compile_source, else None."""
    try:
        module = importlib.import_module("admiss")
    except ImportError:
        return None
    return module if hasattr(module, "compile_source") else None


def has_api(name: str) -> bool:
    module = api()
    return module is not None and hasattr(module, name)


def compiled(props: list[PropertyData], name: str = "bench") -> Any:
    """A compiled admiss rubric declaring ``props``; requires :func:`api`."""
    return api().compile_source(rubric_source(props, name), name=name)


@lru_cache(maxsize=1)
def cli_command() -> tuple[str, ...] | None:
    """The `admiss` console script of this interpreter's environment, when the CLI exists."""
    script = Path(sys.executable).parent / "admiss"
    try:
        has_cli = importlib.util.find_spec("admiss.cli") is not None
    except ImportError:
        has_cli = False
    return (str(script),) if has_cli and script.exists() else None


@lru_cache(maxsize=None)
def cli_supports(option: str) -> bool:
    """Whether `admiss check --help` lists ``option``."""
    command = cli_command()
    if command is None:
        return False
    result = subprocess.run([*command, "check", "--help"], capture_output=True, text=True, env=_plain_env())
    return option in result.stdout


def _plain_env() -> dict[str, str]:
    # A wide terminal keeps typer/rich from wrapping option names in the help text.
    return {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}


def classifications(report: dict) -> list[dict[str, str]]:
    """Per property, each item's detail mapped to its outcome ("admitted" or the exclusion reason)."""
    out = []
    for prop in report["properties"]:
        outcome = {detail: "admitted" for detail in prop["evidence"]}
        outcome.update({e["detail"]: e["reason"] for e in prop["excluded"]})
        out.append(outcome)
    return out


def outcomes_in_order(report: dict, items: list[dict]) -> list[list[str]]:
    """Per property, the outcome of each of ``items`` in bundle order (details are unique)."""
    return [[by_detail.get(i["detail"], "not offered") for i in items] for by_detail in classifications(report)]
