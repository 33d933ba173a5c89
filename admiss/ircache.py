"""A cache of compiled IR on disk, keyed by the rubric's content, so a run skips the parser.

A CLI run spends more time importing lark and parsing a small rubric than checking a
bundle. The analysed IR of each rubric source is kept as JSON in the user's cache folder
(``$ADMISS_CACHE_DIR``, else ``$XDG_CACHE_HOME/admiss``, else ``~/.cache/admiss``), under a
hash of the source text, its name, and the code that compiles it. Files are written
atomically, so concurrent runs are safe; a file that cannot be read or does not hold IR for
that key is ignored (and replaced). ``ADMISS_NO_CACHE=1`` turns the cache off.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Callable

from admiss import __version__, ir

# The modules whose code decides what IR a source compiles to: a change to any of them
# (an editable install being worked on) must not be answered from the cache.
_COMPILING_MODULES = ("ir.py", "lower.py", "analyze.py", "parser.py", "grammar/rubric.lark")


def cache_folder() -> Path | None:
    """Where cached IR lives, or None when the cache is turned off."""
    if os.environ.get("ADMISS_NO_CACHE", "") not in ("", "0"):
        return None
    if os.environ.get("ADMISS_CACHE_DIR"):
        return Path(os.environ["ADMISS_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "admiss"


def _code_fingerprint() -> str:
    package = Path(__file__).parent
    stamps = [__version__, str(ir.IR_VERSION)]
    for name in _COMPILING_MODULES:
        path = package / name
        if not path.exists():  # the grammar sits beside the package in a source checkout
            path = package.parent / name
        try:
            stat = path.stat()
            stamps.append(f"{name}:{stat.st_size}:{stat.st_mtime_ns}")
        except OSError:
            stamps.append(f"{name}:?")
    return "\0".join(stamps)


def cache_key(text: str, name: str) -> str:
    digest = hashlib.sha256()
    for part in (_code_fingerprint(), name, text):
        digest.update(part.encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()


def cached_ir(text: str, name: str, compile_source: Callable[[str, str], ir.Rubric]) -> ir.Rubric:
    """The IR of rubric source ``text`` (named ``name``): from the cache, else compiled and stored."""
    folder = cache_folder()
    if folder is None:
        return compile_source(text, name)
    key = cache_key(text, name)
    path = folder / f"{key}.json"
    found = _read(path, key)
    if found is not None:
        return found
    rubric = compile_source(text, name)
    _store(folder, path, key, rubric)
    return rubric


def _read(path: Path, key: str) -> ir.Rubric | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("key") != key:
            return None
        return ir.from_dict(data["ir"])
    except Exception:  # missing, unreadable or not our IR: compile instead
        return None


def _store(folder: Path, path: Path, key: str, rubric: ir.Rubric) -> None:
    from admiss.files import write_atomically

    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_atomically(path, json.dumps({"key": key, "ir": ir.to_dict(rubric)}, ensure_ascii=False))
    except OSError:  # a read-only or full disk only costs the next run a compile
        pass
