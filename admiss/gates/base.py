"""What every gate reads and returns.

A gate module exposes ``build(gate: ir.Gate, ctx: GateContext) -> GateCheck``. Building
happens once per rubric (validators, clients and prompts are prepared then), running once
per candidate. Cheap gates run inline; costly ones are coroutines so a rung can run them
concurrently and cancel the rest at the first fail.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterator

import attrs

from admiss.config import Config
from admiss.redact import key_values, redact, url_secrets
from admiss.providers import ProviderError, Providers, answer_text
from admiss.untrusted import UntrustedInput

PASS, FAIL, ABSTAIN = "pass", "fail", "abstain"
# Whose fault a malfunction is (docs/gates.md, "Whose fault an error is"). Only the gate's own
# faults count against its error budget: a candidate that makes a gate stumble abstains
# itself, so no run of crafted outputs can switch a check off for the candidates after it.
GATE_FAULT, CANDIDATE_FAULT = "gate", "candidate"


@attrs.frozen
class Candidate:
    """One rung's candidate as a gate sees it."""

    output: str | None
    model: str | None = None
    prompt: str | None = None
    meta: dict = attrs.field(factory=dict)
    samples: tuple[str, ...] | None = None
    # The bundle's evidence plus the candidate's own, as validated bundle items (dicts).
    evidence: tuple[dict, ...] = ()
    rung: str = ""
    # The live cascade's request (the messages sent and the generation fields), so a gate
    # that asks the model again (consistency) asks exactly what the rung asked.
    messages: tuple[dict, ...] | None = None
    params: dict = attrs.field(factory=dict)
    # The tool calls the rung's model proposed (OpenAI's shape): actions to gate, never evidence.
    tool_calls: tuple[dict, ...] = ()

    @property
    def answer(self) -> str:
        """The output and the proposed tool calls as one text (what samples are compared to)."""
        return answer_text(self.output, self.tool_calls)


@attrs.frozen
class GateResult:
    verdict: str  # PASS, FAIL or ABSTAIN
    score: float | None = None
    reason: str = ""
    # True when the gate could not judge the candidate, whoever's fault it was (always
    # ``fault is not None``). Given as True without a fault, the fault is the gate's.
    error: bool = False
    cost_usd: float = 0.0
    # Anything else a report should carry (e.g. the admissibility gate's property reports).
    details: dict[str, Any] | None = None
    # Whose fault the error is: GATE_FAULT when the gate or what it depends on broke (counts
    # against its error budget), CANDIDATE_FAULT when this candidate's own content caused it
    # (counts against the candidate only). None for a genuine verdict or an honest "cannot tell".
    fault: str | None = None

    def __attrs_post_init__(self) -> None:
        if self.error and self.fault is None:
            object.__setattr__(self, "fault", GATE_FAULT)
        if self.error is not (self.fault is not None):  # set only when it changes: most results are verdicts
            object.__setattr__(self, "error", self.fault is not None)


def unsendable(candidate: Candidate) -> GateResult | None:
    """An abstain (the candidate's fault) when its text cannot leave this process as UTF-8.

    A lone surrogate (``"\\ud800"`` in the bundle's JSON) is a str Python holds but no UTF-8
    encoder writes; the gates that send the candidate to a program or a model check first.
    """
    try:
        json.dumps([candidate.output, candidate.prompt, candidate.meta], ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        reason = "the candidate's output, prompt or meta is not valid Unicode (it holds a lone surrogate)"
        return GateResult(ABSTAIN, reason=reason, fault=CANDIDATE_FAULT)
    return None


@contextlib.contextmanager
def untrusted(what: str, gate_side: tuple[type[Exception], ...] = ()) -> Iterator[None]:
    """Whatever the block raises is the untrusted data's doing: UntrustedInput naming ``what``.

    A gate wraps each step that reads or compares text from outside admiss (the candidate's
    output, its samples, a model's reply about it, a gate program's stdout) in this block,
    so an exception that text provokes (a number Python cannot convert, nesting deeper than
    the stack, a comparison that overflows) is the candidate's fault when admiss.cascade
    classifies it, never the gate's. ``gate_side`` are exceptions that name the gate's own
    defect (a schema's broken $ref): they pass through as they are.
    """
    try:
        yield
    except (UntrustedInput, *gate_side):
        raise
    except Exception as exc:
        message = str(exc)
        message = message if len(message) <= 200 else message[:200] + "..."
        raise UntrustedInput(f"{what}: {type(exc).__name__}: {message}") from exc


def shown_value(value: Any) -> str:
    """A value from untrusted JSON as a reason quotes it: its repr, cut short (an integer may
    have 4,300 digits)."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}... ({len(text):,} characters)"


def provider_fault(exc: ProviderError) -> str:
    """Whose fault a failed model call is: the candidate's when the server refused its content."""
    return CANDIDATE_FAULT if exc.content_refused else GATE_FAULT


def _config_or_defaults(config: Config | None) -> Config:
    return Config() if config is None else config


def _providers_of(ctx: "GateContext") -> Providers:
    return Providers(ctx.config.providers)


def _secrets_of(ctx: "GateContext") -> tuple[str, ...]:
    providers = ctx.config.providers.values()
    return key_values((p.api_key_env for p in providers), os.environ) + url_secrets(p.base_url for p in providers)


@attrs.frozen
class GateContext:
    """What building a gate may need, prepared once per rubric run.

    ``providers`` holds one HTTP client per provider for the whole run; whoever makes the
    context closes them with ``await ctx.providers.aclose()`` when the run ends.
    """

    rubric_dir: Path
    config: Config = attrs.field(default=None, converter=_config_or_defaults)
    providers: Providers = attrs.field(default=attrs.Factory(_providers_of, takes_self=True))
    # The rubric's file name, for diagnostics raised while building a gate.
    rubric_file: str | None = None
    # The rubric's compiled properties by name, for the admissibility gate.
    properties: dict[str, Any] = attrs.field(factory=dict)
    # True for a run without model calls on purpose (admiss check --offline): a gate that
    # would call a model abstains with a reason starting "offline" instead.
    offline: bool = False
    # The configured provider keys' values and URL user-info, masked in every reason (admiss.redact).
    secrets: tuple[str, ...] = attrs.field(default=attrs.Factory(_secrets_of, takes_self=True), repr=False)

    def redact(self, text: str) -> str:
        """``text`` fit to show: URL user-info and provider key values masked."""
        return redact(text, self.secrets)


@attrs.frozen
class GateCheck:
    kind: str
    # Cheap gates (non_empty, json_valid, schema, admissibility) run inline and in order;
    # costly ones (subprocess, judge, consistency) run concurrently after them.
    cheap: bool
    run: Callable[[Candidate], GateResult] | None = None
    arun: Callable[[Candidate], Awaitable[GateResult]] | None = None
