"""``admiss savings``: receipts in; spend, the top-rung counterfactual and the net saving out.

Inputs are read into one neutral :class:`Request` per served (or refused) request, whatever
file they came from:

- a receipt store (an SQLite file, told by its header bytes, or a postgresql:// URL), read
  through admiss.receipts, the one package that knows the stores' tables;
- exported receipts (``admiss receipts export``: JSON Lines of receipt bodies);
- the JSON reports of ``admiss check`` on bundles with candidates (a replay of logged
  outputs), one per line or one per file.

Every figure is defined in docs/savings.md. Inputs are untrusted: each problem is an
InputError at ``file:line`` (or the store row) with a code E170-E174, never a traceback,
except a record whose numbers are of the right kind but past belief (a receipt an older
gateway priced at $2e12): that record alone is skipped, with the warning W175 naming it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Iterable, Iterator

import attrs

from admiss.bundle import type_word
from admiss.config import Config
from admiss.errors import DOCS_URL, AdmissError, Diagnostic, InputError
from admiss.files import reading
from admiss.receipts import DamagedRow, StoreError, is_url, open_store
from admiss.redact import clipped, redact
from admiss.source import NO_SPAN, Source, Span

SQLITE_HEADER = b"SQLite format 3\x00"
ACTUAL, ESTIMATED, UNPRICED = "actual", "estimated", "unpriced"
SERVED, ESCALATED, EXHAUSTED = "served", "escalated", "exhausted"
OUTCOMES = (SERVED, ESCALATED, EXHAUSTED)
VERDICTS = ("pass", "fail", "abstain", "skipped")
# Bounds on what one call can report, so that no sum of costs or tokens leaves a float's range:
# no model call costs a billion dollars or reads a trillion tokens.
MAX_COST_USD = 1e9
MAX_TOKENS = 10**12
# The receipt flag of a request some call of which reported token counts past belief
# (admiss.serve.calls.USAGE_OUT_OF_BOUNDS; a receipt is data, so the name is repeated, not imported).
USAGE_OUT_OF_BOUNDS = "usage_out_of_bounds"
# An input with more broken records than this stops being read (the rest would only repeat).
MAX_ERRORS_PER_FILE = 20
# The warning code of a record skipped for an absurd number, and how many are named in the figures.
SKIPPED = "W175"
MAX_SKIPPED_NOTES = 20
# The warning code of a model whose calls count $0 because admiss.toml gives it no price.
UNPRICED_MODEL = "W176"


# ---------------------------------------------------------------- the neutral request


@attrs.frozen
class GateRun:
    gate: str
    verdict: str
    gate_cost_usd: float
    reason: str | None = None  # why a skipped gate did not run

@attrs.frozen
class RungRun:
    rung: str
    model: str | None
    cost_usd: float
    outcome: str
    gates: tuple[GateRun, ...]


@attrs.frozen
class Request:
    """One request as a receipt or a check report tells it, with its top-rung price."""

    chain: str
    rungs: tuple[RungRun, ...]
    served: str | None
    top_rung: str
    top_model: str | None
    # What serving this request from the top rung costs, and how that is known.
    top_cost_usd: float | None
    top_cost: str  # ACTUAL, ESTIMATED or UNPRICED
    note: str | None = None  # why a request is unpriced
    # The model of each call the receipt counts at $0 for want of a price (tokens reported,
    # no [prices] for the model in admiss.toml): spend these figures leave out.
    unpriced_calls: tuple[str, ...] = ()

    @property
    def model_cost_usd(self) -> float:
        return math.fsum(r.cost_usd for r in self.rungs)

    @property
    def gate_cost_usd(self) -> float:
        return math.fsum(g.gate_cost_usd for r in self.rungs for g in r.gates)

    @property
    def escalated(self) -> bool:
        return any(r.outcome == ESCALATED for r in self.rungs)


class _Bad(Exception):
    """A record breaks the receipt or report shape at ``path``."""

    def __init__(self, path: str, problem: str, code: str = "E173"):
        super().__init__(f"{path}: {problem}")
        self.path, self.problem, self.code = path, problem, code


class _Absurd(_Bad):
    """A cost or token count that is a number, but out of its bounds (negative, infinite, NaN
    or too large). The record is well formed, so it is skipped rather than the input refused:
    one absurd receipt must not hide every other one."""

    def __init__(self, path: str, problem: str):
        super().__init__(path, problem, SKIPPED)


# ---------------------------------------------------------------- typed fields


def _quoted(value: Any) -> str:
    """``value`` as JSON, short enough to quote in a message (redacted before it is cut)."""
    return clipped(json.dumps(value), 40)


def _field(record: dict, key: str, path: str) -> Any:
    if key not in record:
        raise _Bad(f"{path}.{key}".lstrip("."), "missing")
    return record[key]


def _object(value: Any, path: str) -> dict:
    if not isinstance(value, dict):
        raise _Bad(path, f"must be an object, not {type_word(value)}")
    return value


def _array(value: Any, path: str) -> list:
    if not isinstance(value, list):
        raise _Bad(path, f"must be an array, not {type_word(value)}")
    return value


def _string(value: Any, path: str, nullable: bool = False) -> str | None:
    if value is None and nullable:
        return None
    if not isinstance(value, str):
        raise _Bad(path, f"must be a string{' or null' if nullable else ''}, not {type_word(value)}")
    return value


def _cost(value: Any, path: str, nullable: bool = False) -> float | None:
    if value is None and nullable:
        return None
    problem = f"must be a number from 0 to {MAX_COST_USD:.0e}, not {_quoted(value)}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Bad(path, problem)
    # The comparison is exact for any int or float (NaN fails it), so no conversion overflows.
    if not 0 <= value <= MAX_COST_USD:
        raise _Absurd(path, problem)
    return float(value)


def _tokens(value: Any, path: str) -> int | None:
    if value is None:
        return None
    problem = f"must be a whole number from 0 to {MAX_TOKENS:.0e} or null, not {_quoted(value)}"
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Bad(path, problem)
    if not 0 <= value <= MAX_TOKENS:
        raise _Absurd(path, problem)
    return value


# ---------------------------------------------------------------- records to requests


def _rungs(chain: dict, path: str) -> tuple[RungRun, ...]:
    rungs = []
    for i, rung in enumerate(_array(_field(chain, "rungs", path), f"{path}.rungs")):
        where = f"{path}.rungs[{i}]"
        rung = _object(rung, where)
        gates = tuple(_gate(_object(g, f"{where}.gates[{j}]"), f"{where}.gates[{j}]")
                      for j, g in enumerate(_array(_field(rung, "gates", where), f"{where}.gates")))
        rungs.append(RungRun(
            rung=_string(_field(rung, "rung", where), f"{where}.rung"),
            model=_string(rung.get("model"), f"{where}.model", nullable=True),
            cost_usd=_cost(_field(rung, "cost_usd", where), f"{where}.cost_usd"),
            outcome=_one_of(_field(rung, "outcome", where), f"{where}.outcome", OUTCOMES),
            gates=gates,
        ))
    return tuple(rungs)


def _one_of(value: Any, path: str, words: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in words:
        raise _Bad(path, f"must be one of {', '.join(words)}, not {_quoted(value)}")
    return value


def _gate(gate: dict, path: str) -> GateRun:
    verdict = _one_of(_field(gate, "verdict", path), f"{path}.verdict", VERDICTS)
    reason = _string(gate.get("reason"), f"{path}.reason", nullable=True) if verdict == "skipped" else None
    return GateRun(_string(_field(gate, "gate", path), f"{path}.gate"), verdict,
                   _cost(_field(gate, "gate_cost_usd", path), f"{path}.gate_cost_usd"), reason or None)


def _chain(record: dict) -> tuple[dict, str, str | None, tuple[RungRun, ...]]:
    chain = _object(record["chain"], "chain")
    name = _string(_field(chain, "name", "chain"), "chain.name")
    served = _string(_field(chain, "served", "chain"), "chain.served", nullable=True)
    rungs = _rungs(chain, "chain")
    if served is not None and not any(r.rung == served and r.outcome == SERVED for r in rungs):
        raise _Bad("chain.served", f"names '{served}', but no rung in chain.rungs served")
    return chain, name, served, rungs


def _top(top: Any, path: str) -> dict:
    top = _object(top, path)
    _string(_field(top, "rung", path), f"{path}.rung")
    _string(top.get("model"), f"{path}.model", nullable=True)
    return top


def request_from_report(record: dict) -> Request:
    """A check report's request. The top rung's price is its candidate's cost as the bundle
    gave it: actual when the top rung ran, an estimate when a lower rung served first,
    unpriced when the bundle gave none (a check report has no token counts)."""
    chain, name, served, rungs = _chain(record)
    if "top_rung" not in chain:
        raise _Bad("chain.top_rung", "missing: the report is from an admiss check that did not name the "
                   "top rung; check the bundles again with this admiss")
    top = _top(chain["top_rung"], "chain.top_rung")
    cost = _cost(_field(top, "cost_usd", "chain.top_rung"), "chain.top_rung.cost_usd", nullable=True)
    if cost is None:
        return Request(name, rungs, served, top["rung"], top.get("model"), None, UNPRICED,
                       "the bundle gave no cost_usd for its top-rung candidate")
    ran = any(r.rung == top["rung"] for r in rungs)
    return Request(name, rungs, served, top["rung"], top.get("model"), cost, ACTUAL if ran else ESTIMATED)


def request_from_receipt(record: dict, config: Config) -> Request:
    """A receipt's request. The top rung's price is its real call where it ran; otherwise
    the last rung call's prompt and completion tokens at the top model's ``[prices]``."""
    _, name, served, rungs = _chain(record)
    top = _top(_field(record, "top_rung", ""), "top_rung")
    usage = _field(record, "usage", "")
    calls = _usage(usage)
    free = _unpriced_calls(usage, config)
    if USAGE_OUT_OF_BOUNDS in _flags(record.get("flags", [])):
        # Some call of it went unpriced: its spend is a floor and its top-rung cost unknown.
        return Request(name, rungs, served, top["rung"], top.get("model"), None, UNPRICED,
                       "an upstream reported token usage out of bounds (the receipt is flagged)", free)
    ran = [r for r in rungs if r.rung == top["rung"]]
    if ran:
        return Request(name, rungs, served, top["rung"], top.get("model"), ran[-1].cost_usd, ACTUAL, None, free)
    model = top.get("model")
    unpriced = Request(name, rungs, served, top["rung"], model, None, UNPRICED, None, free)
    price = config.price_for(model) if model else None
    if price is None:
        return attrs.evolve(unpriced, note=f'no [prices."{model}"] in admiss.toml' if model
                            else "the receipt names no top-rung model")
    last = [c for c in calls if rungs and c["rung"] == rungs[-1].rung]
    if not last or last[-1]["prompt_tokens"] is None or last[-1]["completion_tokens"] is None:
        return attrs.evolve(unpriced, note="the last rung call reported no token counts")
    cost = price.cost_usd(last[-1]["prompt_tokens"], last[-1]["completion_tokens"])
    return Request(name, rungs, served, top["rung"], model, cost, ESTIMATED, None, free)


def _flags(flags: Any) -> list[str]:
    return [_string(flag, f"flags[{i}]") for i, flag in enumerate(_array(flags, "flags"))]


def _usage(usage: Any) -> list[dict]:
    """The receipt's rung calls (judge and consistency calls are gate cost, already counted)."""
    calls = []
    for i, call in enumerate(_array(usage, "usage")):
        where = f"usage[{i}]"
        call = _object(call, where)
        if _string(_field(call, "purpose", where), f"{where}.purpose") != "rung":
            continue
        calls.append({"rung": _string(_field(call, "rung", where), f"{where}.rung"),
                      "prompt_tokens": _tokens(call.get("prompt_tokens"), f"{where}.prompt_tokens"),
                      "completion_tokens": _tokens(call.get("completion_tokens"), f"{where}.completion_tokens")})
    return calls


def _unpriced_calls(usage: list, config: Config) -> tuple[str, ...]:
    """The models of the calls (any purpose) that reported tokens, cost $0 on the receipt,
    and have no ``[prices]`` in admiss.toml: a gateway without a price records them at $0.
    A model priced at 0 (a local one) is priced, and not among them."""
    found = []
    for i, call in enumerate(usage):
        where = f"usage[{i}]"
        model = _string(call.get("model"), f"{where}.model", nullable=True)
        tokens = [_tokens(call.get(key), f"{where}.{key}") for key in ("prompt_tokens", "completion_tokens")]
        cost = _cost(call.get("cost_usd", 0.0), f"{where}.cost_usd")
        if model and cost == 0 and any(tokens) and config.price_for(model) is None:
            found.append(model)
    return tuple(found)


def request_of(record: Any, config: Config) -> Request:
    """The Request a receipt body or a check report tells; _Bad when it is neither."""
    if not isinstance(record, dict):
        raise _Bad("$", f"must be a receipt or a check report (an object), not {type_word(record)}", "E172")
    if "chain" not in record:
        if "verdict" in record:
            raise _Bad("chain", "missing: this check report has no chain; check the bundles with a rubric "
                       "that has a CHAIN", "E172")
        raise _Bad("$", "neither a receipt (chain, usage, top_rung) nor a check report (chain, verdict)", "E172")
    if "verdict" in record:
        return request_from_report(record)
    return request_from_receipt(record, config)


# ---------------------------------------------------------------- reading inputs


@attrs.frozen
class Record:
    """One JSON value read from an input, and where it came from."""

    value: Any
    file: str
    line: int = 0  # 0 when the value has no line of its own (a store row, an array element)
    where: str = ""  # a store row's name
    prefix: str = ""  # an array element's JSON path, "[3]"


def _store_records(where: str | Path) -> Iterator[Record | Diagnostic]:
    """Each receipt of a store, and a Diagnostic in place of each damaged row."""
    name = redact(str(where))  # a URL's password stays out of every message
    try:
        store = open_store(where, create=False, read_only=True)
    except StoreError as exc:
        raise _store_error(name, str(exc).removeprefix(f"{name}: ")) from None
    damaged: list[DamagedRow] = []
    try:
        for receipt in store.iter_since(None, damaged.append):
            yield from _damaged(name, damaged)
            yield Record(receipt, name, where=f"receipt {receipt.get('id')!r}")
        yield from _damaged(name, damaged)
    except StoreError as exc:
        raise _store_error(name, str(exc).removeprefix(f"{store.where}: ")) from None
    finally:
        store.close()


def _damaged(name: str, rows: list[DamagedRow]) -> Iterator[Diagnostic]:
    """An E170 for each damaged row in ``rows``, which is emptied."""
    for row in rows:
        yield Diagnostic("E170", f"receipt {row.receipt_id!r}: {row.problem}", file=name)
    rows.clear()


def _store_error(name: str, message: str) -> InputError:
    return InputError([Diagnostic("E171", message, file=name,
                                  hint=f"a receipt store is written by admiss serve ({DOCS_URL}savings.md#inputs)")])


def _json_problem(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return exc.msg
    # RecursionError, or the ValueError of an integer too long to convert.
    return "nested too deeply" if isinstance(exc, RecursionError) else str(exc)


def _json_error(name: str, text: str, exc: Exception, line: int | None = None) -> AdmissError:
    """E170 for ``text``: a whole file, or (with ``line``) one line of a JSON Lines file."""
    line_offset = 0 if line is None else line - 1
    if not isinstance(exc, json.JSONDecodeError):
        span = NO_SPAN if line is None else Span.point(line, 1)
        return InputError([Diagnostic("E170", f"invalid JSON: {_json_problem(exc)}", span, file=name)])
    span = Span.point(exc.lineno + line_offset, exc.colno)
    return InputError([Diagnostic("E170", f"invalid JSON: {exc.msg}", span, file=name,
                                  hint="give receipts or check reports: one JSON object per line, or one per file")],
                      Source(name, "\n" * line_offset + text))


def _text_records(path: Path, text: str) -> Iterator[Record | AdmissError]:
    """A whole-file JSON value (an object, or an array of them), else JSON Lines."""
    name = str(path)
    if path.suffix != ".jsonl":
        try:
            value = json.loads(text)
        except (ValueError, RecursionError) as exc:
            # "Extra data": the first value was whole and more follow, so it is JSON Lines.
            if not (isinstance(exc, json.JSONDecodeError) and exc.msg == "Extra data"):
                yield _json_error(name, text, exc)
                return
        else:
            yield from ((Record(v, name, prefix=f"[{i}]") for i, v in enumerate(value)) if isinstance(value, list)
                        else [Record(value, name, 1)])
            return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield Record(json.loads(line), name, number)
        except (ValueError, RecursionError) as exc:
            yield _json_error(name, line, exc, number)


def records_of(path: str | Path) -> Iterator[Record | AdmissError | Diagnostic]:
    """Each JSON record in one input (a file, or a postgresql:// store), or an error in its place."""
    if is_url(path):
        yield from _store_records(path)
        return
    path = Path(path)
    with reading(path), path.open("rb") as handle:
        header = handle.read(len(SQLITE_HEADER))
    if header == SQLITE_HEADER:
        yield from _store_records(path)
        return
    with reading(path):
        text = path.read_bytes().decode("utf-8")
    yield from _text_records(path, text)


def _record_error(record: Record, bad: _Bad) -> Diagnostic:
    path = bad.path if not record.prefix else record.prefix if bad.path == "$" else f"{record.prefix}.{bad.path}"
    message = f"{path}: {bad.problem}"
    if isinstance(bad, _Absurd):
        message = f"skipped: {message}"
    if record.where:
        message = f"{record.where}: {message}"
    span = Span.point(record.line, 1) if record.line else NO_SPAN
    return Diagnostic(bad.code, message, span, "warning" if isinstance(bad, _Absurd) else "error", file=record.file)


def requests_of(paths: Iterable[str | Path], config: Config) -> Iterator[Request | Diagnostic | AdmissError]:
    """Every request in ``paths``, read as a stream, and each problem in its place (up to a
    limit per file): a warning Diagnostic for a record skipped, an AdmissError otherwise."""
    for path in paths:
        found = 0
        try:
            for item in records_of(path):
                if isinstance(item, Record):
                    try:
                        yield request_of(item.value, config)
                        continue
                    except _Absurd as absurd:
                        yield _record_error(item, absurd)
                        continue
                    except _Bad as bad:
                        item = _record_error(item, bad)
                yield item if isinstance(item, AdmissError) else InputError([item])
                found += 1
                if found >= MAX_ERRORS_PER_FILE:
                    yield InputError([Diagnostic("E174", f"stopped reading after {found} errors", file=redact(str(path)))])
                    break
        except AdmissError as error:
            yield error


# ---------------------------------------------------------------- the figures


@attrs.define
class GateFigures:
    gate: str
    position: int  # the gate's place on its rung, from 1: two gates of one kind stay apart
    verdicts: dict[str, int] = attrs.field(factory=lambda: dict.fromkeys(VERDICTS, 0))
    gate_cost_usd: float = 0.0
    # Why the gate was skipped, with how often (a gate that never ran shows only skips).
    skipped_reasons: dict[str, int] = attrs.field(factory=dict)

    def to_dict(self) -> dict[str, Any]:
        runs = self.verdicts["pass"] + self.verdicts["fail"] + self.verdicts["abstain"]
        reasons = sorted(self.skipped_reasons.items(), key=lambda item: (-item[1], item[0]))
        return {"gate": self.gate, "position": self.position, "runs": runs, **self.verdicts,
                "skipped_reasons": dict(reasons), "gate_cost_usd": _usd(self.gate_cost_usd)}


@attrs.define
class RungFigures:
    rung: str
    models: set[str] = attrs.field(factory=set)
    reached: int = 0
    served: int = 0
    model_cost_usd: float = 0.0
    gate_cost_usd: float = 0.0
    gates: dict[tuple[int, str], GateFigures] = attrs.field(factory=dict)

    def add(self, run: RungRun) -> None:
        self.reached += 1
        self.served += run.outcome == SERVED
        if run.model:
            self.models.add(run.model)
        self.model_cost_usd += run.cost_usd
        for position, gate in enumerate(run.gates, start=1):
            figures = self.gates.get((position, gate.gate))
            if figures is None:
                figures = self.gates[(position, gate.gate)] = GateFigures(gate.gate, position)
            figures.verdicts[gate.verdict] += 1
            if gate.verdict == "skipped":
                reason = gate.reason or "no reason given"
                figures.skipped_reasons[reason] = figures.skipped_reasons.get(reason, 0) + 1
            figures.gate_cost_usd += gate.gate_cost_usd
            self.gate_cost_usd += gate.gate_cost_usd

    def to_dict(self, requests: int) -> dict[str, Any]:
        return {"rung": self.rung, "models": sorted(self.models), "reached": self.reached, "served": self.served,
                "served_share": _share(self.served, requests), "model_cost_usd": _usd(self.model_cost_usd),
                "gate_cost_usd": _usd(self.gate_cost_usd),
                "gates": [g.to_dict() for _, g in sorted(self.gates.items())]}


@attrs.define
class Figures:
    """The sums over a set of requests (one chain's, or all)."""

    requests: int = 0
    served: int = 0
    escalated: int = 0
    model_cost_usd: float = 0.0
    gate_cost_usd: float = 0.0
    top_rung_cost_usd: float = 0.0
    # Model and gate spend of the priced requests only: the saving compares like with like.
    priced_model_cost_usd: float = 0.0
    priced_gate_cost_usd: float = 0.0
    top_cost: dict[str, int] = attrs.field(factory=lambda: {ACTUAL: 0, ESTIMATED: 0, UNPRICED: 0})
    unpriced_notes: dict[str, int] = attrs.field(factory=dict)
    unpriced_models: dict[str, int] = attrs.field(factory=dict)  # calls counted at $0, by model

    def add(self, request: Request) -> None:
        self.requests += 1
        for model in request.unpriced_calls:
            self.unpriced_models[model] = self.unpriced_models.get(model, 0) + 1
        self.served += request.served is not None
        self.escalated += request.escalated
        model, gate = request.model_cost_usd, request.gate_cost_usd
        self.model_cost_usd += model
        self.gate_cost_usd += gate
        self.top_cost[request.top_cost] += 1
        if request.top_cost_usd is None:
            note = request.note or "unpriced"
            self.unpriced_notes[note] = self.unpriced_notes.get(note, 0) + 1
            return
        self.top_rung_cost_usd += request.top_cost_usd
        self.priced_model_cost_usd += model
        self.priced_gate_cost_usd += gate

    def to_dict(self) -> dict[str, Any]:
        net = self.top_rung_cost_usd - self.priced_model_cost_usd - self.priced_gate_cost_usd
        return {
            "requests": self.requests,
            "served": self.served,
            "exhausted": self.requests - self.served,
            "escalated": self.escalated,
            "escalation_rate": _share(self.escalated, self.requests),
            "model_cost_usd": _usd(self.model_cost_usd),
            "gate_cost_usd": _usd(self.gate_cost_usd),
            "spend_usd": _usd(self.model_cost_usd + self.gate_cost_usd),
            "top_rung_cost_usd": _usd(self.top_rung_cost_usd),
            "top_rung_cost": dict(self.top_cost),
            "priced_requests": self.top_cost[ACTUAL] + self.top_cost[ESTIMATED],
            "priced_model_cost_usd": _usd(self.priced_model_cost_usd),
            "priced_gate_cost_usd": _usd(self.priced_gate_cost_usd),
            "gross_saving_usd": _usd(self.top_rung_cost_usd - self.priced_model_cost_usd),
            "net_saving_usd": _usd(net),
            "net_saving_share": _share(net, self.top_rung_cost_usd),
            "unpriced_notes": dict(sorted(self.unpriced_notes.items())),
            "unpriced_models": dict(sorted(self.unpriced_models.items())),
        }


@attrs.define
class ChainFigures:
    chain: str
    top_rung: str
    figures: Figures = attrs.field(factory=Figures)
    rungs: dict[str, RungFigures] = attrs.field(factory=dict)

    def add(self, request: Request) -> None:
        self.figures.add(request)
        for run in request.rungs:
            self.rungs.setdefault(run.rung, RungFigures(run.rung)).add(run)

    def to_dict(self) -> dict[str, Any]:
        rungs = dict(self.rungs)
        rungs.setdefault(self.top_rung, RungFigures(self.top_rung))  # shown even when never reached
        return {"chain": self.chain, "top_rung": self.top_rung, **self.figures.to_dict(),
                "rungs": [r.to_dict(self.figures.requests) for r in rungs.values()]}


def savings(requests: Iterable[Request | Diagnostic]) -> dict[str, Any]:
    """The savings figures of ``requests`` as JSON-ready data (docs/savings.md, field by field);
    a Diagnostic among them is a record skipped, counted and (the first few) named."""
    total = Figures()
    chains: dict[str, ChainFigures] = {}
    skipped: list[str] = []
    count = 0
    for request in requests:
        if isinstance(request, Diagnostic):
            count += 1
            if len(skipped) < MAX_SKIPPED_NOTES:
                skipped.append(request.render())
            continue
        total.add(request)
        chains.setdefault(request.chain, ChainFigures(request.chain, request.top_rung)).add(request)
    return {**total.to_dict(), "skipped": count, "skipped_notes": skipped,
            "chains": [chains[name].to_dict() for name in sorted(chains)]}


def unpriced_warnings(data: dict[str, Any]) -> list[str]:
    """A W176 warning per model whose calls these figures count at $0 for want of a price."""
    return [f'{UNPRICED_MODEL} {model} has no [prices."{model}"] in admiss.toml: {calls} of its calls are '
            "counted at $0 (their receipts have no cost), so the spend shown is short of what was spent"
            for model, calls in data["unpriced_models"].items()]


def _usd(value: float) -> float:
    # Sums of binary fractions drift in the last digits (0.0124 + 0.0004 = 0.012800000000000001);
    # no price is finer than a millionth of a cent.
    return round(value, 12) + 0.0


def _share(part: float, whole: float) -> float | None:
    return None if not whole else round(part / whole, 12)
