"""The admissibility decision written for engines a user might pick instead of admiss.

Each peer turns the same properties into its own rules once, then classifies a bundle's
evidence: per property, each item's outcome in order ("forbidden", "inadmissible",
"shortcut-rejected" or "admitted"), FORBID first as in the seed. A peer whose package is
not installed is reported as missing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable

from benchmarks.datagen import PropertyData

# Evidence list in, outcomes per property out.
Classifier = Callable[[list[dict]], list[list[str]]]


@dataclass(frozen=True)
class Peer:
    name: str
    package: str
    build: Callable[[list[PropertyData]], Classifier]


def _list_literal(values: tuple[str, ...]) -> str:
    # CEL, rule-engine and Cedar all read JSON's string and list syntax.
    return json.dumps(list(values))


def _cel_property(prop: PropertyData) -> str:
    return (
        f"evidence.map(e, e.kind in {_list_literal(prop.forbid)} ? 'forbidden'"
        f" : !(e.kind in {_list_literal(prop.admit)}) ? 'inadmissible'"
        f" : e.source_label in {_list_literal(prop.shortcuts)} ? 'shortcut-rejected' : 'admitted')"
    )


def cel_expression(props: list[PropertyData]) -> str:
    """One CEL expression for the whole rubric, so a bundle's evidence is converted once."""
    return "[" + ", ".join(_cel_property(p) for p in props) + "]"


def build_cel_rust(props: list[PropertyData]) -> Classifier:
    import cel

    program = cel.compile(cel_expression(props))
    return lambda items: program.execute({"evidence": items})


def build_cel_python(props: list[PropertyData]) -> Classifier:
    import celpy

    env = celpy.Environment()
    program = env.program(env.compile(cel_expression(props)))

    def classify(items: list[dict]) -> list[list[str]]:
        result = program.evaluate({"evidence": celpy.json_to_cel(items)})
        return [[str(outcome) for outcome in per_prop] for per_prop in result]

    return classify


def _rule_engine_property(prop: PropertyData) -> str:
    return (
        f"[(e['kind'] in {_list_literal(prop.forbid)} ? 'forbidden'"
        f" : (e['kind'] in {_list_literal(prop.admit)}"
        f" ? (e['source_label'] in {_list_literal(prop.shortcuts)} ? 'shortcut-rejected' : 'admitted')"
        f" : 'inadmissible')) for e in evidence]"
    )


def build_rule_engine(props: list[PropertyData]) -> Classifier:
    import rule_engine

    rule = rule_engine.Rule("[" + ", ".join(_rule_engine_property(p) for p in props) + "]")
    return lambda items: [list(per_prop) for per_prop in rule.evaluate({"evidence": items})]


def _cedar_policies(prop: PropertyData) -> str:
    """Cedar policies for one property: a permit for ADMIT and one forbid per exclusion reason.

    Cedar's forbid-overrides-permit is the seed's FORBID-overrides-ADMIT; the shortcut forbid
    leaves out forbidden kinds so that the reason it reports is the seed's.
    """
    scope = f'principal, action == Action::"support", resource == Property::"{prop.name}"'
    admit, forbid, shortcuts = (_list_literal(v) for v in (prop.admit, prop.forbid, prop.shortcuts))
    return (
        f'@id("{prop.name}.admit")\npermit({scope}) when {{ {admit}.contains(context.kind) }};\n'
        f'@id("{prop.name}.forbidden")\nforbid({scope}) when {{ {forbid}.contains(context.kind) }};\n'
        f'@id("{prop.name}.shortcut")\nforbid({scope}) when {{ {admit}.contains(context.kind)'
        f" && !{forbid}.contains(context.kind) && {shortcuts}.contains(context.source_label) }};\n"
    )


def _cedar_outcome(result: object) -> str:
    if result.allowed:
        return "admitted"
    reasons = result.diagnostics.id_annotations_by_reason.values()
    if any(r.endswith(".forbidden") for r in reasons):
        return "forbidden"
    if any(r.endswith(".shortcut") for r in reasons):
        return "shortcut-rejected"
    # A default deny: no permit matched, so the kind is not admitted.
    return "inadmissible"


def build_cedar(props: list[PropertyData]) -> Classifier:
    """Each (property, item) pair is one authorization request, the item's fields its context."""
    import cedarpy

    policies = cedarpy.PolicySet.from_str("".join(_cedar_policies(p) for p in props))
    resources = [f'Property::"{p.name}"' for p in props]

    def classify(items: list[dict]) -> list[list[str]]:
        requests = [
            {
                "principal": f'Evidence::"{i}"',
                "action": 'Action::"support"',
                "resource": resource,
                "context": {"kind": item["kind"], "source_label": item["source_label"]},
            }
            for resource in resources
            for i, item in enumerate(items)
        ]
        outcomes = [_cedar_outcome(r) for r in cedarpy.is_authorized_batch(requests, policies, [])]
        n = len(items)
        return [outcomes[k * n : (k + 1) * n] for k in range(len(resources))]

    return classify


PEERS = (
    Peer("CEL (Rust `cel`)", "common-expression-language", build_cel_rust),
    Peer("CEL (cel-python)", "cel-python", build_cel_python),
    Peer("rule-engine", "rule-engine", build_rule_engine),
    Peer("Cedar (cedarpy)", "cedarpy", build_cedar),
)


def verdicts(outcomes: list[list[str]]) -> list[str]:
    """Each property's verdict: yes when any item was admitted, else the default no."""
    return ["yes" if "admitted" in per_prop else "no" for per_prop in outcomes]
