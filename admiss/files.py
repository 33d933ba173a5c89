"""Reading files with located errors, and writing them so readers never see half of one."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Iterator

from admiss.errors import input_error


@contextlib.contextmanager
def reading(path: Path | str) -> Iterator[None]:
    """Turns whatever goes wrong reading ``path`` in the block into InputError E001 naming it."""
    try:
        yield
    except FileNotFoundError:
        raise input_error(str(path), "no such file", hint="check the path") from None
    except IsADirectoryError:
        raise input_error(str(path), "is a folder, not a file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise input_error(str(path), f"cannot read: {exc}") from None


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so readers see the old file or the whole new one, never half.

    Concurrent writers each write their own temporary file; the last rename wins whole.
    """
    folder = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
