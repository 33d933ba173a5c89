"""Reading files with located errors, and writing them so readers never see half of one."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path
from typing import IO, Iterable, Iterator

from admiss import limits
from admiss.errors import Diagnostic, InputError, input_error
from admiss.source import Source, Span


@contextlib.contextmanager
def reading(path: Path | str) -> Iterator[None]:
    """Turns whatever goes wrong reading ``path`` in the block into InputError E001 naming it."""
    try:
        yield
    except FileNotFoundError:
        raise input_error(str(path), "no such file", hint="check the path") from None
    except IsADirectoryError:
        raise input_error(str(path), "is a folder, not a file") from None
    except UnicodeDecodeError:
        raise not_utf8(str(path)) from None
    except (OSError, UnicodeError) as exc:  # UnicodeError: a path holding a lone surrogate, say
        raise input_error(str(path), f"cannot read: {exc}") from None


def refuse_overwriting_inputs(outputs: Iterable[Path], inputs: Iterable[Path | str]) -> None:
    """InputError E006 when an output would be written over one of the command's inputs.

    The same file is the same device and inode, however it is named: the same path, through
    ``./`` or ``..``, a symlink or a hard link. An output that does not exist yet is no
    input; an input that cannot be read is left to its reader to report.
    """
    for output in outputs:
        written = _identity(output)
        if written is None:
            continue
        for path in inputs:
            if _identity(path) == written:
                same = "" if str(path) == str(output) else f" (the input {path})"
                raise InputError([Diagnostic(
                    "E006", f"is one of the command's inputs{same}: admiss never writes over an input",
                    file=str(output), hint="write the output to another path")])


def _identity(path: Path | str) -> tuple[int, int] | None:
    try:
        found = os.stat(path)
    except (OSError, ValueError):  # missing, unreadable, or a name no file can have
        return None
    return found.st_dev, found.st_ino


def not_utf8(path: str) -> InputError:
    """E001 at the first byte of ``path`` that is not UTF-8, with its line and a caret, as a
    .jsonl line's B001 is: the codec's own words ("position 34") name no line a user can find."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(limits.MAX_BUNDLE_BYTES)
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        start = exc.start
    except OSError:
        start = None
    if start is None:  # changed under us, or standard input: nothing to read again
        return input_error(path, "cannot read: not UTF-8 text")
    return not_utf8_at(path, raw, start)


def not_utf8_at(path: str, raw: bytes, start: int) -> InputError:
    """E001 at byte ``start`` of ``raw``, the text of ``path``, which is not UTF-8 there."""
    line_start = raw.rfind(b"\n", 0, start) + 1
    line_end = raw.find(b"\n", start)
    shown = raw[line_start:line_end if line_end >= 0 else len(raw)].decode("utf-8", "replace").rstrip("\r")
    line = 1 + raw.count(b"\n", 0, start)
    column = len(raw[line_start:start].decode("utf-8", "replace")) + 1
    return InputError([Diagnostic("E001", f"cannot read: not UTF-8 text (byte 0x{raw[start]:02x})",
                                  Span.point(line, column), hint="admiss reads UTF-8 text: save the file as UTF-8",
                                  file=path)], Source(path, "\n" * (line - 1) + shown))


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so readers see the old file or the whole new one, never half
    (see :func:`atomic_writer`)."""
    with atomic_writer(path) as handle:
        handle.write(text)


@contextlib.contextmanager
def atomic_writer(path: Path) -> Iterator[IO[str]]:
    """A text handle whose writes replace ``path`` whole when the block ends, or not at all
    when it raises: readers see the old file or the whole new one, never half.

    A symlink is written through (its target is replaced, the link stays). A regular file
    keeps its mode (and, where allowed, its owner); a new one gets the mode the umask gives.
    Anything that is not a regular file (a device such as /dev/null, a FIFO, a socket) is
    written in place: renaming over it would replace the node itself for every other program.
    Concurrent writers each write their own temporary file; the last rename wins whole.
    """
    target = Path(os.path.realpath(path))
    try:
        existing = os.stat(target)
    except FileNotFoundError:
        existing = None
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        with open(target, "w", encoding="utf-8") as handle:
            yield handle
        return
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            yield handle
            _keep_mode_and_owner(handle.fileno(), existing)
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise


def _keep_mode_and_owner(fd: int, existing: os.stat_result | None) -> None:
    # mkstemp makes the file 0600: give it the replaced file's mode, or a new file's usual one.
    if existing is None:
        os.fchmod(fd, 0o666 & ~_umask())
        return
    os.fchmod(fd, stat.S_IMODE(existing.st_mode))
    if (existing.st_uid, existing.st_gid) != (os.getuid(), os.getgid()):
        with contextlib.suppress(PermissionError):  # only root may give a file away
            os.fchown(fd, existing.st_uid, existing.st_gid)


def _umask() -> int:
    # The umask can only be read by setting it; set it straight back.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
