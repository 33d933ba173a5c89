"""Cutting files into pieces for workers: byte ranges of a .jsonl file at line boundaries.

``admiss check --jobs`` and ``admiss.ray`` both hand out pieces, each read by one worker
from its own byte range, so no bundle text passes through the process that cut them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator, NamedTuple

from admiss.errors import AdmissError
from admiss.files import reading

# A piece is a byte range of a .jsonl file that starts at a line start, with the number of
# its first line; a .json file (or a file that cannot be read) is one piece of its own (end -1). Pieces are at least this
# large, and there are about this many per worker, so a slow worker does not hold up the end.
MIN_PIECE_BYTES = 32 * 1024
PIECES_PER_JOB = 4
BLOCK = 1 << 20
# Shrinking pieces (``--jobs``): each is 1/LEFT_SHARE of one worker's share of the bytes
# left, and none is smaller than 1/TAIL_PIECES of the input, so the workers finish within a
# small piece of each other instead of one checking the last of equal pieces alone (an
# eighth of the work, for two workers), in few pieces (about 16 for two workers).
LEFT_SHARE = 2
TAIL_PIECES = 128


class Piece(NamedTuple):
    index: int
    file: int  # which of the paths it belongs to
    path: str
    start: int
    end: int
    first_line: int


def cut_pieces(paths: list[Path], jobs: int, min_bytes: int = MIN_PIECE_BYTES, shrinking: bool = False) -> list[Piece]:
    """Pieces of ``paths`` in input order, each .jsonl file cut at line boundaries: of equal
    size, or ``shrinking`` towards the end (for workers that take the next piece when done)."""
    return list(pieces_of(paths, jobs, min_bytes, shrinking))


def pieces_of(paths: list[Path], jobs: int, min_bytes: int = MIN_PIECE_BYTES, shrinking: bool = False) -> Iterator[Piece]:
    """cut_pieces's pieces, each as soon as it is cut, so a worker can begin on the first
    while the rest of the input is cut."""
    sizes = [_size(p) if p.suffix == ".jsonl" else 0 for p in paths]
    total = sum(sizes)
    if shrinking:
        floor = max(min_bytes, total // TAIL_PIECES)
        left = [sum(sizes[file + 1:]) for file in range(len(paths))]  # bytes in the files after each
        size_at = [lambda position, file=file: max(floor, (left[file] + sizes[file] - position) // (jobs * LEFT_SHARE))
                   for file in range(len(paths))]
    else:
        piece_bytes = max(min_bytes, total // (jobs * PIECES_PER_JOB) + 1)
        size_at = [lambda position: piece_bytes] * len(paths)
    index = 0
    for file, (path, size) in enumerate(zip(paths, sizes)):
        ranges = _line_ranges(path, size, size_at[file]) if path.suffix == ".jsonl" and size >= 0 else [(0, -1, 0)]
        for piece_range in ranges:
            yield Piece(index, file, str(path), *piece_range)
            index += 1


def _size(path: Path) -> int:
    """The file's size, or -1 when it cannot be read (a worker then reports why in its place)."""
    try:
        return path.stat().st_size
    except OSError:
        return -1


def _line_ranges(path: Path, size: int, size_at: Callable[[int], int]) -> Iterator[tuple[int, int, int]]:
    """(start, end, first line number) of each piece of ``path``, each once cut: one pass
    counting line ends in large blocks (at memory speed), cutting after the first line end
    past ``size_at(start)`` bytes from each piece's start."""
    start, first_line, lines, position, target = 0, 1, 0, 0, size_at(0)
    try:
        with reading(path), path.open("rb") as data:
            while block := data.read(BLOCK):
                while target < position + len(block):
                    cut = block.find(b"\n", max(0, target - position))
                    if cut < 0:
                        break
                    boundary = position + cut + 1
                    if boundary < size:
                        yield (start, boundary, first_line)
                        start, first_line = boundary, lines + block.count(b"\n", 0, cut + 1) + 1
                    target = boundary + size_at(boundary)
                lines += block.count(b"\n")
                position += len(block)
    except AdmissError:
        # Unreadable: the rest of it (the whole file, if no piece was cut) is one piece,
        # whose worker reports the error in its place.
        yield (start, size, first_line) if start else (0, -1, 0)
        return
    yield (start, size, first_line)
