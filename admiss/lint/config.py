"""Which rules run: ``--select`` / ``--ignore`` and the ``[lint]`` configuration table.

The table is ``[lint]`` in admiss.toml or ``[tool.admiss.lint]`` in pyproject.toml, found in
the working folder or the nearest folder above it that has one (admiss.toml first).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterable

import attrs

from admiss.errors import DOCS_URL, input_error
from admiss.lint.codes import BY_CODE

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

_KEYS = ("select", "ignore")
EVERY_RULE = ("ADM",)


@attrs.frozen
class LintConfig:
    """Codes or code prefixes to run, and to leave out; leaving out wins."""

    select: tuple[str, ...] = EVERY_RULE
    ignore: tuple[str, ...] = ()

    def enabled(self, code: str) -> bool:
        return code.startswith(self.select) and not code.startswith(self.ignore)

    def with_options(self, select: Iterable[str] | None, ignore: Iterable[str]) -> "LintConfig":
        """``--select`` replaces the configured selection; ``--ignore`` adds to the ignored."""
        chosen = tuple(select) if select is not None else self.select
        return attrs.evolve(self, select=checked_codes(chosen, "--select"),
                            ignore=self.ignore + checked_codes(ignore, "--ignore"))


def checked_codes(codes: Iterable[str], where: str) -> tuple[str, ...]:
    """``codes`` split on commas, each a rule code or a prefix of one; E004 otherwise."""
    found = tuple(part.strip().upper() for code in codes for part in code.split(",") if part.strip())
    for code in found:
        if not any(known.startswith(code) for known in BY_CODE):
            raise input_error(where, f"{code!r} is neither a lint rule code nor a prefix of one",
                              hint=f"the codes are listed in {DOCS_URL}lint/index.md; ADM selects them all",
                              code="E004")
    return found


def _table(path: Path) -> dict | None:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise input_error(str(path), f"cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise input_error(str(path), f"not valid TOML: {exc}", code="E004") from None
    if path.name == "pyproject.toml":
        return data.get("tool", {}).get("admiss", {}).get("lint")
    return data.get("lint")


def _config_from(path: Path, table: dict) -> LintConfig:
    unknown = sorted(set(table) - set(_KEYS))
    if unknown:
        raise input_error(str(path), f"unknown lint setting {unknown[0]!r}", hint="lint settings: select, ignore",
                          code="E004")
    for key in _KEYS:
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise input_error(str(path), f"lint setting {key!r} must be a list of codes", code="E004")
    select = checked_codes(table["select"], str(path)) if "select" in table else EVERY_RULE
    return LintConfig(select=select, ignore=checked_codes(table.get("ignore", []), str(path)))


def find_config(start: Path) -> LintConfig:
    """The lint settings of the nearest folder, from ``start`` up, that configures lint."""
    for folder in (start, *start.parents):
        for name in ("admiss.toml", "pyproject.toml"):
            path = folder / name
            if path.is_file():
                table = _table(path)
                if table is not None:
                    return _config_from(path, table)
    return LintConfig()
