"""Inspect AI eval logs: a ``.json`` log (an object with ``eval`` and ``samples``), one of
its samples (an object with ``messages`` and ``epoch``), or an ``.eval`` log (a zip whose
``samples/*.json`` entries are the samples; read by ``eval_file_samples``).

Each sample is one run: its ``messages`` are chat messages (``system``, ``user``,
``assistant``, ``tool``), their ``content`` a string or a list of contents (``text`` parts
give text, ``reasoning`` parts ``reasoning`` steps; images, audio and data are skipped). An
assistant message's ``tool_calls`` are tool calls (``function`` the tool, ``arguments``
already JSON; a ``parse_error`` makes the arguments unusable); a ``tool`` message answers the
call its ``tool_call_id`` names (with none, the earliest unanswered call of its
``function``).

Errors: a tool message with an ``error`` (Inspect's ToolCallError: ``type`` and ``message``)
is an error; nothing else is (Inspect flags every failure it catches). A sample that ended
in an ``error`` keeps its unanswered calls without a result, and the error is listed in
``skipped``.

Final answer: the last assistant text, when the run ends on it. A run that ends by calling
``submit`` (the ``basic_agent`` and ``react`` agents' answer tool) gives that call's
``answer`` argument as its final answer; ``react`` itself already writes the submitted
answer as the last assistant message's text.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any, Callable, Iterator, NoReturn

from admiss.errors import Diagnostic, TraceError
from admiss.limits import MAX_BUNDLE_BYTES
from admiss.traces.build import Steps, fail, field, short, type_word, typed
from admiss.traces.steps import ASSISTANT_TEXT, REASONING, SYSTEM, TOOL_CALL, USER, Step, StepRef, Trace

NAME = "inspect"
# B026: a log of more or fewer than one sample read as one trace (each sample is a run).
MANY_SAMPLES = "B026"
# B027: an .eval zip that is broken or breaks a bound (entries, sizes, compression).
BAD_ZIP = "B027"
_ROLES = {"system": SYSTEM, "user": USER, "assistant": ASSISTANT_TEXT}
SUBMIT = "submit"

# Bounds on an .eval zip, untrusted input: its entry count, the bytes of any one sample
# once decompressed (one sample is one trace, bounded as one bundle is), and of all of them.
MAX_ZIP_ENTRIES = 100_000
MAX_SAMPLE_BYTES = MAX_BUNDLE_BYTES
MAX_EVAL_BYTES = 1024 * 1024 * 1024
_ZSTD = 93  # Inspect writes its entries with Zstandard, which zipfile reads only from Python 3.14


def mismatch(value: Any) -> tuple[str, str] | None:
    """Where and why ``value`` is not an Inspect log or sample, or None when it is one."""
    if not isinstance(value, dict):
        return "$", "not an object (an Inspect eval log or sample)"
    if "eval" in value and "samples" in value:
        return None if isinstance(value["samples"], list) else ("samples", "not an array")
    if "messages" in value and "epoch" in value:
        return None if isinstance(value["messages"], list) else ("messages", "not an array")
    if "eval" in value:
        return "samples", "an eval log with no samples (written with no sample data?)"
    return "$", "no \"eval\" and \"samples\" (an eval log) or \"messages\" and \"epoch\" (a sample)"


def runs(value: Any) -> list[tuple[str, Callable[[str], Trace]]] | None:
    """Each sample of a log: its JSON path, and what reads it given its name; None for a sample."""
    if isinstance(value, dict) and "eval" in value and isinstance(value.get("samples"), list):
        model = _eval_model(value)
        return [(f"samples[{i}]", lambda name, s=sample, p=f"samples[{i}]": read_sample(s, name, p, model))
                for i, sample in enumerate(value["samples"])]
    return None


def read(value: Any, name: str) -> Trace:
    """The Trace of a sample, or of a log holding exactly one; TraceError where it breaks."""
    typed(value, dict, name, "$")
    if "samples" in value:
        samples = typed(value["samples"], list, name, "samples")
        if len(samples) != 1:
            fail(name, "samples", f"an eval log of {len(samples)} samples: a trace is one run", MANY_SAMPLES,
                 hint="read each sample as a trace of its own (admiss import does)")
        return read_sample(samples[0], name, "samples[0]", _eval_model(value))
    return read_sample(value, name, "")


def _eval_model(log: dict) -> str | None:
    spec = log.get("eval")
    return spec.get("model") if isinstance(spec, dict) and type(spec.get("model")) is str else None


def read_sample(sample: Any, name: str, base: str, model: str | None = None) -> Trace:
    """The Trace of one sample at JSON path ``base`` ("" for the top)."""
    at = base or "$"
    prefix = f"{base}." if base else ""
    typed(sample, dict, name, at)
    steps = Steps(NAME, name)
    messages = field(sample, "messages", list, name, at)
    for i, message in enumerate(messages):
        _message(steps, typed(message, dict, name, f"{prefix}messages[{i}]"), i, f"{prefix}messages[{i}]", name)
    _submitted(steps)
    error = sample.get("error")
    if isinstance(error, dict):
        message = error.get("message")
        steps.skip(StepRef(NAME, f"{prefix}error"), "the sample ended in an error: "
                   + (short(message) if type(message) is str else "no message"))
    output = sample.get("output")
    if isinstance(output, dict) and type(output.get("model")) is str:
        model = output["model"]
    return steps.trace(model)


def _message(steps: Steps, message: dict, i: int, where: str, name: str) -> None:
    role = field(message, "role", str, name, where)
    ref = StepRef(NAME, where, i, event_id=message["id"] if type(message.get("id")) is str else None)
    if role == "tool":
        _tool_result(steps, message, ref, name)
        return
    if role not in _ROLES:
        fail(name, f"{where}.role", f"unknown role '{role}'", hint="roles: system, user, assistant, tool")
    text = _content(steps, message.get("content"), ref, name)
    if text:
        steps.add(Step(_ROLES[role], ref, text=text))
    calls = message.get("tool_calls") or []
    for j, call in enumerate(typed(calls, list, name, f"{where}.tool_calls")):
        at = f"{where}.tool_calls[{j}]"
        call_id = field(typed(call, dict, name, at), "id", str, name, at)
        step = steps.call(StepRef(NAME, at, i, call_id), field(call, "function", str, name, at),
                          call.get("arguments", {}), call_id, "id")
        if call.get("parse_error"):  # Inspect kept what it could of arguments that did not parse
            step.args_parsed = False
    if not text and not calls:
        steps.skip(ref, f"{role} message with no text")


def _tool_result(steps: Steps, message: dict, ref: StepRef, name: str) -> None:
    call_id = message.get("tool_call_id")
    if call_id is not None:
        typed(call_id, str, name, f"{ref.path}.tool_call_id")
    text = _content(steps, message.get("content"), ref, name)
    error = message.get("error")
    reason = None
    if error is not None:
        error = typed(error, dict, name, f"{ref.path}.error")
        kind, said = error.get("type"), error.get("message")
        reason = short(": ".join(str(part) for part in (kind, said) if part)) or "error"
    tool = message.get("function") if type(message.get("function")) is str else None
    steps.answer(call_id, text, reason, StepRef(NAME, ref.path, ref.message_index, call_id, event_id=ref.event_id),
                 "tool_call_id", tool_name=tool, from_text=True)


def _content(steps: Steps, content: Any, ref: StepRef, name: str) -> str:
    """The text of a message's content; its reasoning parts become steps on the way."""
    if content is None or type(content) is str:
        return content or ""
    if type(content) is not list:
        fail(name, f"{ref.path}.content", f"must be a string or an array of contents, not {type_word(content)}")
    texts = []
    for j, part in enumerate(content):
        at = f"{ref.path}.content[{j}]"
        kind = field(typed(part, dict, name, at), "type", str, name, at)
        if kind == "text":
            texts.append(field(part, "text", str, name, at))
        elif kind == "reasoning" and type(part.get("reasoning")) is str and part["reasoning"]:
            steps.add(Step(REASONING, StepRef(NAME, at, ref.message_index), text=part["reasoning"]))
        else:
            steps.skip(StepRef(NAME, at, ref.message_index), f"{kind} content")
    return "\n".join(texts)


def _submitted(steps: Steps) -> None:
    """A run that ends on a ``submit`` call: its ``answer`` argument is the run's answer."""
    last = steps.items[-1] if steps.items else None
    if last is None or last.type != TOOL_CALL or last.tool_name != SUBMIT or not isinstance(last.args, dict):
        return
    answer = last.args.get("answer")
    if type(answer) is str and answer:
        steps.add(Step(ASSISTANT_TEXT, StepRef(NAME, f"{last.ref.path}.arguments.answer", last.ref.message_index,
                                               last.ref.tool_call_id), text=answer))


# ---------------------------------------------------------------- the .eval zip


def eval_file_samples(path: str | Path) -> Iterator[tuple[str, Any, str, int, None]]:
    """Each sample of the ``.eval`` log at ``path`` in the zip's order: its entry's name, its
    JSON value, its text, 0 (the line its text starts after) and None (it is no file's
    line); TraceError B027 for a zip that is broken or breaks a bound."""
    from admiss.bundle import parse_bundle_text

    name = str(path)
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError) as error:
        _zip_fail(name, f"not a readable .eval zip: {error}")
    with archive:
        infos = archive.infolist()
        if len(infos) > MAX_ZIP_ENTRIES:
            _zip_fail(name, f"{len(infos)} entries: more than {MAX_ZIP_ENTRIES}")
        samples = [info for info in infos if info.filename.startswith("samples/") and info.filename.endswith(".json")]
        if not samples:
            _zip_fail(name, "no samples/*.json entries: the log holds no sample data")
        total = 0
        for info in samples:
            total += info.file_size
            if info.file_size > MAX_SAMPLE_BYTES or total > MAX_EVAL_BYTES:
                _zip_fail(name, f"{info.filename}: {info.file_size} bytes once decompressed: more than "
                          + (f"{MAX_SAMPLE_BYTES}" if info.file_size > MAX_SAMPLE_BYTES else
                             f"{MAX_EVAL_BYTES} in all"))
            data = _entry_bytes(archive, info, name)
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                _zip_fail(name, f"{info.filename}: not UTF-8 text")
            entry = f"{name}#{info.filename}"
            yield entry, parse_bundle_text(text, entry), text, 0, None


def _entry_bytes(archive: zipfile.ZipFile, info: zipfile.ZipInfo, name: str) -> bytes:
    """An entry's bytes, never more than its declared size: the declared size is checked
    against the bound, and a stream that decompresses to more than it said is a zip bomb."""
    try:
        if info.compress_type == _ZSTD:
            data = _zstd_entry(archive, info, name)
        else:
            with archive.open(info) as stream:
                data = stream.read(info.file_size + 1)
    except (zipfile.BadZipFile, NotImplementedError, OSError, EOFError, ValueError, zlib.error) as error:
        _zip_fail(name, f"{info.filename}: cannot be decompressed: {error}")
    if len(data) != info.file_size:
        _zip_fail(name, f"{info.filename}: decompresses to other than the {info.file_size} bytes it declares")
    return data


def _zstd_entry(archive: zipfile.ZipFile, info: zipfile.ZipInfo, name: str) -> bytes:
    try:
        import zstandard
    except ModuleNotFoundError:
        _zip_fail(name, f"{info.filename}: Zstandard-compressed, which needs the zstandard package",
                  hint="pip install 'admiss[inspect]'")
    handle = archive.fp
    handle.seek(info.header_offset)
    header = handle.read(zipfile.sizeFileHeader)
    if len(header) != zipfile.sizeFileHeader or header[:4] != zipfile.stringFileHeader:
        raise zipfile.BadZipFile("bad local file header")
    name_length, extra_length = struct.unpack_from("<HH", header, 26)
    handle.seek(name_length + extra_length, io.SEEK_CUR)
    compressed = handle.read(info.compress_size)
    chunks, size = [], 0
    try:  # Inspect writes several frames per entry
        reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(compressed), read_across_frames=True)
        while size <= info.file_size:
            chunk = reader.read(min(1 << 20, info.file_size + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except zstandard.ZstdError as error:
        raise ValueError(str(error)) from None
    data = b"".join(chunks)
    if zlib.crc32(data) != info.CRC:
        raise zipfile.BadZipFile("CRC check failed")
    return data


def _zip_fail(name: str, message: str, hint: str | None = None) -> NoReturn:
    raise TraceError([Diagnostic(BAD_ZIP, message, hint=hint or "an .eval log is the zip Inspect AI writes",
                                 file=name)])
