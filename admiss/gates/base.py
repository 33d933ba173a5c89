"""What every gate reads and returns.

A gate module exposes ``build(gate: ir.Gate, ctx: GateContext) -> GateCheck``. Building
happens once per rubric (validators, clients and prompts are prepared then), running once
per candidate. Cheap gates run inline; costly ones are coroutines so a rung can run them
concurrently and cancel the rest at the first fail.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Awaitable, Callable

import attrs

from admiss.config import Config
from admiss.providers import Providers

PASS, FAIL, ABSTAIN = "pass", "fail", "abstain"


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


@attrs.frozen
class GateResult:
    verdict: str  # PASS, FAIL or ABSTAIN
    score: float | None = None
    reason: str = ""
    # True when the gate malfunctioned (crash, timeout, malformed reply, provider failure):
    # such results count against the gate's error budget; genuine fails do not.
    error: bool = False
    cost_usd: float = 0.0
    # Anything else a report should carry (e.g. the admissibility gate's property reports).
    details: dict[str, Any] | None = None


def _config_or_defaults(config: Config | None) -> Config:
    return Config() if config is None else config


def _providers_of(ctx: "GateContext") -> Providers:
    return Providers(ctx.config.providers)


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


@attrs.frozen
class GateCheck:
    kind: str
    # Cheap gates (non_empty, json_valid, schema, admissibility) run inline and in order;
    # costly ones (subprocess, judge, consistency) run concurrently after them.
    cheap: bool
    run: Callable[[Candidate], GateResult] | None = None
    arun: Callable[[Candidate], Awaitable[GateResult]] | None = None
