"""``consistency K k [THRESHOLD t]``: does the model give the same answer again?

Score = the share of k samples equivalent to the candidate's output. Two texts are
equivalent when both parse as JSON and the parsed values are equal (``true`` is not ``1``;
``1`` is ``1.0``; key order does not matter), else when they are equal after trimming,
collapsing runs of whitespace and case-folding. Pass iff score >= THRESHOLD (default 0.8);
K defaults to 5.

Samples come from the candidate's ``samples`` in the bundle (the first k; fewer than k
abstains), else from k concurrent new calls to the candidate's model when admiss.toml
configures its provider and the bundle has a prompt (in the live cascade: the rung's own
request, messages and generation fields), else the gate abstains. Maker ==
checker is intended here: the signal is the model's own stability. New calls are priced
by ``[prices]`` as gate cost.

With ``MEANING MODEL "provider/model"`` equivalence is decided by meaning instead
(admiss.gates.meaning): the candidate and its samples are clustered by bidirectional
entailment, the score is the share of the k samples in the candidate's cluster, and the
details give the clusters, their semantic entropy and every entailment call, priced as
gate cost. A failed call abstains with ``error``; a rejected reply abstains without.
"""

from __future__ import annotations

import asyncio
from typing import Any, Sequence

import attrs

from admiss import ir
from admiss.errors import Diagnostic, InputError
from admiss.gates.base import (ABSTAIN, CANDIDATE_FAULT, FAIL, GATE_FAULT, PASS, Candidate, GateCheck, GateContext,
                                GateResult, provider_fault, unsendable, untrusted)
from admiss.gates.json_valid import NotJSON, parse_output
from admiss.gates.meaning import Asker, clusters_of, needs_calls, semantic_entropy, share_with
from admiss.providers import Completion, ProviderError, cost_usd

DEFAULT_K = 5
DEFAULT_THRESHOLD = 0.8

_NOT_JSON = object()


def build(gate: ir.Gate, ctx: GateContext) -> GateCheck:
    k = gate.k if gate.k is not None else DEFAULT_K
    if k < 1:
        raise InputError([Diagnostic("E001", f"K must be at least 1, not {k}", span=gate.span_of("k"), file=ctx.rubric_file)])
    threshold = gate.threshold if gate.threshold is not None else DEFAULT_THRESHOLD
    return GateCheck(kind=gate.kind, cheap=False, arun=_Consistency(k, threshold, ctx, gate.meaning_model).run)


def equivalent(a: str, b: str) -> bool:
    """Whether two outputs say the same thing, by the rule in the module docstring."""
    return _same(_canonical(a), _canonical(b))


def _canonical(text: str) -> tuple[Any, str]:
    try:
        value = parse_output(text)
    except NotJSON:
        value = _NOT_JSON
    return value, " ".join(text.split()).casefold()


def _same(a: tuple[Any, str], b: tuple[Any, str]) -> bool:
    if a[0] is not _NOT_JSON and b[0] is not _NOT_JSON:
        with untrusted("comparing a sample with the output"):
            return _json_equal(a[0], b[0])
    return a[1] == b[1]


def _json_equal(a: Any, b: Any) -> bool:
    # An explicit stack, not recursion: the reader admits values nested deeper than Python's
    # stack, and a RecursionError raised that deep also breaks whatever finalizer runs there.
    pending = [(a, b)]
    while pending:
        a, b = pending.pop()
        if isinstance(a, dict) and isinstance(b, dict):
            if a.keys() != b.keys():
                return False
            pending.extend((a[key], b[key]) for key in a)
        elif isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b):
                return False
            pending.extend(zip(a, b))
        elif not _scalar_equal(a, b):
            return False
    return True


def _scalar_equal(a: Any, b: Any) -> bool:
    # Python says True == 1; JSON does not.
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def draws_samples(candidate: Candidate) -> bool:
    """Whether the gate will call the candidate's model for samples (the bundle has none)."""
    return not candidate.samples and (candidate.output is not None or candidate.tool_calls) \
        and candidate.prompt is not None \
        and candidate.model is not None


class _NoSamples(Exception):
    """No way to get k samples; the message says what is missing."""


@attrs.frozen
class _Consistency:
    k: int
    threshold: float
    ctx: GateContext
    # The model that decides meaning (MEANING MODEL), or None to compare texts and values.
    meaning_model: str | None = None

    async def run(self, candidate: Candidate) -> GateResult:
        if candidate.output is None and not candidate.tool_calls:
            return GateResult(ABSTAIN, reason="no output to compare samples with")
        if candidate.samples:
            return await self._bundle_samples(candidate)
        if self.ctx.offline:
            return GateResult(ABSTAIN, reason="offline: no samples in the bundle, and no new ones drawn")
        try:
            self._check_can_resample(candidate)
        except _NoSamples as exc:
            return GateResult(ABSTAIN, reason=str(exc))
        return unsendable(candidate) or await self._new_samples(candidate)

    async def _bundle_samples(self, candidate: Candidate) -> GateResult:
        samples = candidate.samples or ()
        if len(samples) < self.k:
            return GateResult(ABSTAIN, reason=f"the bundle has {len(samples)} sample(s), K is {self.k}")
        return await self._decided(candidate, samples[: self.k], "bundle")

    def _check_can_resample(self, candidate: Candidate) -> None:
        missing = []
        if not self.ctx.providers.configured(candidate.model):
            missing.append(f"no provider configured for the candidate's model ({candidate.model or 'none given'})")
        if candidate.prompt is None and candidate.messages is None:
            missing.append("no prompt to resample")
        if missing:
            raise _NoSamples(f"no samples in the bundle, and cannot draw new ones: {'; '.join(missing)}")

    async def _new_samples(self, candidate: Candidate) -> GateResult:
        model = candidate.model or ""
        messages = candidate.messages or [{"role": "user", "content": candidate.prompt or ""}]
        # return_exceptions: every call that ran is priced, even when one of them failed.
        # Cancelling this coroutine cancels the calls still in flight.
        replies = await asyncio.gather(
            *(self.ctx.providers.complete(model, messages, candidate.params) for _ in range(self.k)),
            return_exceptions=True,
        )
        completions = [r for r in replies if isinstance(r, Completion)]
        cost, cost_note = cost_usd(self.ctx.config, model, [c.usage for c in completions])
        failures = [r for r in replies if isinstance(r, BaseException)]
        if failures:
            return _abstain_on(failures, cost, cost_note)
        result = await self._decided(candidate, [c.answer for c in completions], "provider")
        notes = "; ".join(n for n in (cost_note, (result.details or {}).get("cost_note")) if n) or None
        return attrs.evolve(result, cost_usd=cost + result.cost_usd, details={**(result.details or {}), "cost_note": notes})

    async def _decided(self, candidate: Candidate, samples: Sequence[str], source: str) -> GateResult:
        if self.meaning_model is None:
            return self._scored(candidate.answer, samples, source)
        return await self._by_meaning(self.meaning_model, candidate, samples, source)

    async def _by_meaning(self, model: str, candidate: Candidate, samples: Sequence[str], source: str) -> GateResult:
        answers = [candidate.answer, *samples]
        canonical = [_canonical(answer) for answer in answers]

        def cheaply_same(a: int, b: int) -> bool:
            return _same(canonical[a], canonical[b])

        if self.ctx.offline and needs_calls(len(answers), cheaply_same):
            return GateResult(ABSTAIN, reason=f"offline: meaning model {model} not called")
        asker = Asker(model, candidate.prompt, answers, self.ctx)
        clusters = await clusters_of(len(answers), cheaply_same, asker.entails)
        details = {"samples_from": source, "k": self.k, "cost_note": "; ".join(sorted(asker.cost_notes)) or None}
        if asker.failure is not None:
            return GateResult(ABSTAIN, reason=asker.failure, fault=asker.fault, cost_usd=asker.cost_usd,
                              details={**details, "meaning": asker.receipt(None)})
        agreeing, score = share_with(clusters, 0, self.k)
        passed = score >= self.threshold
        entropy = semantic_entropy(clusters)
        reason = (f"{agreeing}/{self.k} samples mean the same as the candidate ({len(clusters)} cluster(s), "
                  f"semantic entropy {entropy:.3f}): score {score:g} {'>=' if passed else '<'} threshold {self.threshold:g}")
        return GateResult(PASS if passed else FAIL, score=score, reason=reason, cost_usd=asker.cost_usd,
                          details={**details, "agreeing": agreeing, "meaning": asker.receipt(clusters)})

    def _scored(self, output: str, samples: Sequence[str], source: str) -> GateResult:
        reference = _canonical(output)
        agreeing = sum(_same(reference, _canonical(sample)) for sample in samples)
        score = agreeing / self.k
        passed = score >= self.threshold
        reason = f"{agreeing}/{self.k} samples agree: score {score:g} {'>=' if passed else '<'} threshold {self.threshold:g}"
        details = {"samples_from": source, "agreeing": agreeing, "k": self.k}
        return GateResult(PASS if passed else FAIL, score=score, reason=reason, details=details)


def _abstain_on(failures: list[BaseException], cost: float, cost_note: str | None) -> GateResult:
    unexpected = [f for f in failures if not isinstance(f, ProviderError)]
    if unexpected:
        raise unexpected[0]
    reason = f"{len(failures)} sampling call(s) failed: {failures[0]}"
    # The gate's fault unless every failed call was refused for what it carried (the prompt).
    faults = {provider_fault(f) for f in failures}
    fault = CANDIDATE_FAULT if faults == {CANDIDATE_FAULT} else GATE_FAULT
    return GateResult(ABSTAIN, reason=reason, fault=fault, cost_usd=cost, details={"cost_note": cost_note})
