"""Writing files (admiss fmt, compile -o): modes kept, symlinks written through, special files
written in place and never renamed over."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path


from admiss.files import write_atomically

UNFORMATTED = 'PROPERTY p "P" {\n      ADMIT verified_external_source\n}\n'


def test_a_regular_file_keeps_its_mode(tmp_path):
    path = tmp_path / "r.rubric"
    path.write_text("old", encoding="utf-8")
    path.chmod(0o640)
    write_atomically(path, "new")
    assert path.read_text(encoding="utf-8") == "new"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_a_new_file_gets_the_umask_mode_not_0600(tmp_path):
    old = os.umask(0o022)
    try:
        write_atomically(tmp_path / "new.json", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == 0o644


def test_a_symlink_is_written_through_and_stays_a_link(tmp_path):
    target = tmp_path / "real" / "r.rubric"
    target.parent.mkdir()
    target.write_text("old", encoding="utf-8")
    target.chmod(0o604)
    link = tmp_path / "link.rubric"
    link.symlink_to(target)
    write_atomically(link, "new")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text(encoding="utf-8") == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o604
    assert not list(tmp_path.glob(".*.tmp")) and not list(target.parent.glob(".*.tmp"))


def test_a_fifo_is_written_in_place(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[str] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text(encoding="utf-8")))
    reader.start()
    write_atomically(fifo, "through the pipe")
    reader.join(10)
    assert received == ["through the pipe"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def _null_device(tmp_path: Path) -> Path:
    """A null character device to write to. As root it is a private node made like /dev/null
    (major 1, minor 3): a writer that renames over devices would otherwise replace the
    machine's /dev/null while the test runs. Others cannot rename into /dev, so they use it."""
    if os.geteuid() != 0:
        return Path("/dev/null")
    node = tmp_path / "null"
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    return node


def test_compile_to_a_device_leaves_it_a_device(admiss_cli, tmp_path):
    (tmp_path / "r.rubric").write_text(UNFORMATTED, encoding="utf-8")
    device = _null_device(tmp_path)
    ran = admiss_cli("compile", "r.rubric", "-o", device)
    assert ran.code == 0, ran.err
    assert stat.S_ISCHR(os.stat(device).st_mode)
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert not list(device.parent.glob(".null.*.tmp"))


def test_fmt_keeps_the_mode_and_writes_through_a_symlink(admiss_cli, tmp_path):
    target = tmp_path / "src" / "r.rubric"
    target.parent.mkdir()
    target.write_text(UNFORMATTED, encoding="utf-8")
    target.chmod(0o664)
    (tmp_path / "link.rubric").symlink_to(target)
    ran = admiss_cli("fmt", "link.rubric")
    assert ran.code == 0, ran.err
    assert (tmp_path / "link.rubric").is_symlink()
    assert target.read_text(encoding="utf-8") != UNFORMATTED
    assert stat.S_IMODE(target.stat().st_mode) == 0o664


def test_compile_output_keeps_the_mode(admiss_cli, tmp_path):
    (tmp_path / "r.rubric").write_text(UNFORMATTED, encoding="utf-8")
    out = tmp_path / "r.json"
    out.write_text("{}", encoding="utf-8")
    out.chmod(0o644)
    assert admiss_cli("compile", "r.rubric", "-o", "r.json").code == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o644 and out.read_text(encoding="utf-8").startswith("{\n")


def test_a_writer_that_fails_half_way_leaves_the_old_file_whole(tmp_path):
    from admiss.files import atomic_writer

    path = tmp_path / "reports.jsonl"
    path.write_text("old\n", encoding="utf-8")
    try:
        with atomic_writer(path) as out:
            out.write("new line 1\n")
            raise OSError("disk full")
    except OSError:
        pass
    assert path.read_text(encoding="utf-8") == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["reports.jsonl"]
