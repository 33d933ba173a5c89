"""A cache of compiled IR on disk, keyed by the rubric's content, so a run skips the parser.

A CLI run spends more time importing lark and parsing a small rubric than checking a
bundle. The analysed IR of each rubric source is kept as JSON in the user's cache folder
(``$ADMISS_CACHE_DIR``, else ``$XDG_CACHE_HOME/admiss``, else ``~/.cache/admiss``), under a
hash of the source text, its name, and the code that compiles it. Files are written
atomically, so concurrent runs are safe; a file that cannot be read or does not hold IR for
that key is ignored (and replaced). ``ADMISS_NO_CACHE=1`` turns the cache off.

A cached IR decides what admiss admits, so an entry is trusted only with a valid HMAC-SHA256
under a per-user secret key: 32 random bytes in ``secret.key`` in the cache folder, created
0600. An entry planted or edited by anyone who cannot read that key (another user, a
restored CI cache without it, a tool that rewrites files) fails the check and the rubric
is compiled afresh. A MAC rather than a re-check against the source: the only way to check
IR against its source is to compile the source, which is what the cache saves. A key file
that is not a regular file of this user's, readable by no one else, is not trusted either:
then nothing is read from or written to the cache. See docs/security.md.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
from pathlib import Path
from typing import Callable

from admiss import __version__, ir

# The modules whose code decides what IR a source compiles to: a change to any of them
# (an editable install being worked on) must not be answered from the cache.
_COMPILING_MODULES = ("ir.py", "lower.py", "analyze.py", "parser.py", "grammar/rubric.lark", "limits.py")
_KEY_FILE = "secret.key"
_KEY_BYTES = 32


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
    secret = _secret(folder) if folder is not None else None
    if secret is None:
        return compile_source(text, name)
    key = cache_key(text, name)
    path = folder / f"{key}.json"
    found = _read(path, key, secret)
    if found is not None:
        return found
    rubric = compile_source(text, name)
    _store(path, key, rubric, secret)
    return rubric


def _mac(secret: bytes, key: str, ir_data: object) -> str:
    canonical = json.dumps(ir_data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hmac.new(secret, f"{key}\0{canonical}".encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


def _read(path: Path, key: str, secret: bytes) -> ir.Rubric | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("key") != key or not hmac.compare_digest(str(data.get("mac")), _mac(secret, key, data["ir"])):
            return None
        return ir.from_dict(data["ir"])
    except Exception:  # missing, unreadable, not our IR or not signed by us: compile instead
        return None


def _store(path: Path, key: str, rubric: ir.Rubric, secret: bytes) -> None:
    from admiss.files import write_atomically

    ir_data = ir.to_dict(rubric)
    entry = {"key": key, "mac": _mac(secret, key, ir_data), "ir": ir_data}
    try:
        write_atomically(path, json.dumps(entry, ensure_ascii=False))
    except OSError:  # a read-only or full disk only costs the next run a compile
        pass


def _secret(folder: Path) -> bytes | None:
    """This user's cache key, made on first use; None when there is none to trust."""
    path = folder / _KEY_FILE
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not os.path.lexists(path):
            _create_secret(folder, path)
        return _trusted_secret(path)
    except OSError:
        return None


def _create_secret(folder: Path, path: Path) -> None:
    # Written whole to a private temporary file, then linked into place: a concurrent run
    # sees no key or the whole key, and the first link wins.
    tmp = folder / f".{_KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(secrets.token_bytes(_KEY_BYTES))
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
    finally:
        os.unlink(tmp)


def _trusted_secret(path: Path) -> bytes | None:
    info = os.lstat(path)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        return None
    secret = path.read_bytes()
    return secret if len(secret) == _KEY_BYTES else None
