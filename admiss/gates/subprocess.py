"""``subprocess CMD ["prog", "arg"] [TIMEOUT 5s]``: bring your own check.

The contract: the program runs without a shell, in the rubric's folder, in a process group
of its own, with a small environment: the variables in BASE_ENV (and LC_*), plus those
``[gates] pass_env`` names, never a configured provider's key (the candidate's own code may
run in there, in a test-runner gate). It reads ``{"candidate": output, "prompt": prompt, "meta": meta}`` as JSON on
stdin, with ``"tool_calls"`` (OpenAI's shape) added when the candidate proposes tool calls (the candidate never goes in argv or the environment, so it cannot inject itself into
the command) and prints ``{"verdict": "pass"|"fail"|"abstain", "score"?: x, "reason"?: s}``
on stdout, then exits 0.

Abstain as the gate's fault when: the program is not found or cannot start; it exits
non-zero (even after printing a verdict) or dies on a signal; it runs past the timeout
(default 30 s); stdout exceeds 1 MiB; stdout is not that JSON object; the score is outside
[0, 1]. By the contract a program reports a bad candidate as a verdict, so a broken contract
is the program's. Abstain as the candidate's fault when the candidate's text cannot be
written as UTF-8 (a lone surrogate); the program is not started then.

On a timeout, an overflow or cancellation the whole process group is killed, and
anything the program left running in its group is killed when it exits. On Linux the
program runs under admiss.gates.reaper, a child subreaper, so this holds for its whole
tree (a descendant that left the group with setsid() included), and also when admiss
dies. The verdict counts when the program exits: stdout is then drained for at most
DRAIN_S, so a child that keeps stdout open cannot hold the verdict back until the timeout.

Cost: wall time times ``[gates] subprocess_usd_per_second`` (default 0).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import signal
import sys
import tempfile
from typing import IO, Any, Mapping

import attrs

from admiss import ir
from admiss.config import Config
from admiss.errors import Diagnostic, InputError
from admiss.gates.base import (ABSTAIN, FAIL, GATE_FAULT, PASS, Candidate, GateCheck, GateContext, GateResult,
                                shown_value, unsendable)
from admiss.gates import reaper
from admiss.jsonio import UnreadableJSON, loads_untrusted
from admiss.redact import clipped, clipped_tail

DEFAULT_TIMEOUT_S = 30.0
MAX_STDOUT_BYTES = 1024 * 1024
STDERR_TAIL_BYTES = 400
# After the program exits, how long its stdout may take to close (a child it left behind may
# hold it open); what was written by then is its reply.
DRAIN_S = 0.5
# How long the reaper gets to kill the program's tree and exit before its group is killed.
REAPER_GRACE_S = 2.0
_REAPER = reaper.__file__
# What a gate program gets from admiss's environment: enough to find programs (PATH), to have
# a home and a user for tools that keep caches or look up the user (HOME, USER, LOGNAME), to
# read and write text in the right encoding and time zone (LANG, LANGUAGE, LC_*, TZ), and to
# make temporary files where the operator wants them (TMPDIR). Nothing else is passed unless
# ``[gates] pass_env`` names it; a configured provider key never is.
BASE_ENV = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR")
BASE_ENV_PREFIXES = ("LC_",)


class _Abstain(Exception):
    """The program broke the contract; the message says which way."""


def build(gate: ir.Gate, ctx: GateContext) -> GateCheck:
    if not gate.cmd:
        diagnostic = Diagnostic("E001", 'the subprocess gate needs CMD ["program", ...]', span=gate.span, file=ctx.rubric_file)
        raise InputError([diagnostic])
    runner = _Runner(
        cmd=tuple(gate.cmd),
        cwd=str(ctx.rubric_dir),
        env=program_environment(ctx.config),
        timeout_s=gate.timeout_s if gate.timeout_s is not None else DEFAULT_TIMEOUT_S,
        usd_per_second=ctx.config.gates.subprocess_usd_per_second,
        masked=ctx.secrets,
    )
    return GateCheck(kind=gate.kind, cheap=False, arun=runner.run)


def program_environment(config: Config, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a gate program runs with: BASE_ENV, LC_*, and ``[gates] pass_env``, from
    ``environ`` (admiss's own by default), less every configured provider's key variable."""
    environ = os.environ if environ is None else environ
    keys = {p.api_key_env for p in config.providers.values() if p.api_key_env}
    wanted = set(BASE_ENV) | set(config.gates.pass_env)
    return {
        name: value for name, value in environ.items()
        if (name in wanted or name.startswith(BASE_ENV_PREFIXES)) and name not in keys
    }


@attrs.frozen
class _Runner:
    cmd: tuple[str, ...]
    cwd: str
    env: dict[str, str]
    timeout_s: float
    usd_per_second: float
    # Whether the program runs under admiss.gates.reaper (Linux: PR_SET_CHILD_SUBREAPER).
    reaped: bool = sys.platform.startswith("linux")
    # Marks the reaper's own "cannot start" line on stderr, so no program can pass for it.
    token: str = attrs.field(factory=lambda: secrets.token_hex(8))
    # Masked in what the reason quotes of the program's output, before it is cut (admiss.redact).
    masked: tuple[str, ...] = ()

    async def run(self, candidate: Candidate) -> GateResult:
        loop = asyncio.get_running_loop()
        started = loop.time()
        unfit = unsendable(candidate)
        if unfit is not None:
            return unfit
        result = await self._verdict(_stdin_payload(candidate))
        cost = (loop.time() - started) * self.usd_per_second
        return attrs.evolve(result, cost_usd=cost)

    async def _verdict(self, payload: bytes) -> GateResult:
        with tempfile.TemporaryFile() as stderr:
            try:
                transport, program = await self._start(stderr)
            except _Abstain as exc:
                return GateResult(ABSTAIN, reason=str(exc), fault=GATE_FAULT)
            try:
                _feed(transport, payload)
                stdout = await asyncio.wait_for(program.reply(), self.timeout_s)
                return _verdict_from(transport.get_returncode(), stdout, _tail(stderr, self.masked), self.token,
                                     self.masked)
            except asyncio.TimeoutError:
                return GateResult(ABSTAIN, reason=f"timed out after {self.timeout_s:g}s; process group killed",
                                  fault=GATE_FAULT)
            except _Abstain as exc:
                return GateResult(ABSTAIN, reason=str(exc), fault=GATE_FAULT)
            finally:
                # Also on cancellation: a gate cancelled after a sibling failed leaves nothing running.
                await _end(transport, program, self.reaped)

    def _argv(self) -> tuple[str, ...]:
        if not self.reaped:
            return self.cmd
        return (sys.executable, "-I", "-S", _REAPER, self.token, "--", *self.cmd)

    async def _start(self, stderr: IO[bytes]) -> tuple[asyncio.SubprocessTransport, _Program]:
        loop = asyncio.get_running_loop()
        try:
            return await loop.subprocess_exec(
                lambda: _Program(loop),
                *self._argv(),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                # A file, not a pipe: a chatty program can never block on a full stderr pipe.
                stderr=stderr,
                cwd=self.cwd,
                env=self.env,
                start_new_session=True,
            )
        except FileNotFoundError:
            raise _Abstain(f"program not found: {self.cmd[0]!r}") from None
        except OSError as exc:
            raise _Abstain(f"cannot start {self.cmd[0]!r}: {exc.strerror or exc}") from None


class _Program(asyncio.SubprocessProtocol):
    """Collects stdout up to the cap; ``finished`` resolves once the program is done with it."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self._stdout = bytearray()
        self.finished: asyncio.Future[bytes] = loop.create_future()
        self.exited: asyncio.Future[None] = loop.create_future()

    async def reply(self) -> bytes:
        """stdout once the program has exited and closed it, or DRAIN_S after the exit."""
        await asyncio.wait([self.finished, self.exited], return_when=asyncio.FIRST_COMPLETED)
        if not self.finished.done():
            try:
                return await asyncio.wait_for(asyncio.shield(self.finished), DRAIN_S)
            except asyncio.TimeoutError:
                return bytes(self._stdout)  # a child it left behind holds stdout open
        return self.finished.result()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd != 1 or self.finished.done():
            return
        self._stdout += data
        if len(self._stdout) > MAX_STDOUT_BYTES:
            limit = f"{MAX_STDOUT_BYTES // 1024 // 1024} MiB"
            self.finished.set_exception(_Abstain(f"stdout exceeded {limit}; process group killed"))

    def process_exited(self) -> None:
        _settle(self.exited, None)

    def connection_lost(self, exc: Exception | None) -> None:
        # Called once the program has exited and closed all its pipes.
        _settle(self.finished, bytes(self._stdout))


def _settle(future: asyncio.Future, value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _stdin_payload(candidate: Candidate) -> bytes:
    message = {"candidate": candidate.output, "prompt": candidate.prompt, "meta": candidate.meta}
    if candidate.tool_calls:
        message["tool_calls"] = list(candidate.tool_calls)
    return json.dumps(message, ensure_ascii=False).encode("utf-8")


def _feed(transport: asyncio.SubprocessTransport, payload: bytes) -> None:
    # The pipe transport buffers what the pipe cannot take yet and closes after flushing; a
    # program that never reads its input just leaves it unread (no deadlock with stdout).
    stdin = transport.get_pipe_transport(0)
    stdin.write(payload)
    stdin.close()


async def _end(transport: asyncio.SubprocessTransport, program: _Program, reaped: bool) -> None:
    """Stop the program and all it started, close the pipes, and wait for the exit.

    Under the reaper, a reaper still running is told to stop (SIGTERM): it kills every
    descendant, wherever setsid() took it, then exits. Then, and at once without the
    reaper, the whole process group is killed."""
    if reaped and transport.get_returncode() is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(transport.get_pid(), signal.SIGTERM)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(program.exited), REAPER_GRACE_S)
    try:
        # start_new_session made the program the leader of a group whose id is its pid.
        os.killpg(transport.get_pid(), signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already gone
    transport.close()
    await program.exited


def _tail(stderr: IO[bytes], masked: tuple[str, ...]) -> str:
    # Read more than is shown, so that a secret straddling where the tail starts is whole
    # when it is masked (and a URL's user-info, up to this margin, with its scheme).
    margin = STDERR_TAIL_BYTES + max(map(len, masked), default=0)
    stderr.seek(0, os.SEEK_END)
    stderr.seek(max(0, stderr.tell() - STDERR_TAIL_BYTES - margin))
    return clipped_tail(stderr.read().decode("utf-8", errors="replace").strip(), STDERR_TAIL_BYTES, masked)


def _verdict_from(returncode: int | None, stdout: bytes, stderr_tail: str, token: str,
                  masked: tuple[str, ...]) -> GateResult:
    if returncode == reaper.CANNOT_START and stderr_tail.startswith(f"{token} "):
        raise _Abstain(stderr_tail.removeprefix(f"{token} "))
    if returncode:
        how = f"killed by signal {-returncode}" if returncode < 0 else f"exited with status {returncode}"
        said = f": {stderr_tail}" if stderr_tail else ""
        raise _Abstain(f"program {how}{said}")
    reply = _parse_reply(stdout, masked)
    score = reply.get("score")
    return GateResult(reply["verdict"], score=None if score is None else float(score), reason=reply.get("reason", ""))


def _parse_reply(stdout: bytes, masked: tuple[str, ...]) -> dict[str, Any]:
    try:
        # Lenient numbers: a long integer in a key the contract ignores (a program may echo
        # what the candidate wrote) must not unsettle the verdict; a score read as infinite
        # is out of [0, 1] below.
        reply = loads_untrusted(stdout.decode("utf-8"), lenient_numbers=True)
    except UnicodeDecodeError:
        raise _Abstain("stdout is not UTF-8") from None
    except UnreadableJSON as exc:
        if exc.well_formed:
            raise _Abstain(f"stdout is JSON admiss refuses: {exc}") from None
        raise _Abstain(f"stdout is not JSON ({exc}): {_preview(stdout, masked)}") from None
    if not isinstance(reply, dict):
        raise _Abstain(f"stdout is not a JSON object: {_preview(stdout, masked)}")
    if reply.get("verdict") not in (PASS, FAIL, ABSTAIN):
        raise _Abstain(f'stdout has no "verdict" of "pass", "fail" or "abstain": {_preview(stdout, masked)}')
    if "score" in reply and not _is_score(reply["score"]):
        raise _Abstain(f"score {shown_value(reply['score'])} is not a number in [0, 1]")
    if "reason" in reply and not isinstance(reply["reason"], str):
        raise _Abstain("reason is not a string")
    return reply


def _is_score(value: Any) -> bool:
    # The range is compared before any conversion: an integer too large for a float makes
    # float() raise, and NaN is in no range.
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1


def _preview(stdout: bytes, masked: tuple[str, ...]) -> str:
    text = stdout.decode("utf-8", errors="replace").strip()
    return repr(clipped(text, 120, masked)) if text else "(empty)"
