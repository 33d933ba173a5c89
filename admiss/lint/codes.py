"""The code table: every lint rule's stable code, module and default severity.

Codes are never reused or renumbered. Compile errors (E100-E120) keep their own codes and
are not in this table: they are not rules and cannot be selected, ignored or suppressed.
"""

from __future__ import annotations

from types import ModuleType

import attrs

from admiss.errors import DOCS_URL  # SARIF's helpUri and hovers point at the rule pages under it

from admiss.lint.rules import (
    admissibility_unprovable_by_conversation,
    confirmatory_judge,
    consistency_too_few_samples,
    costly_gate_first,
    default_yes,
    empty_rubric,
    empty_rung,
    final_answer_mapped_otherwise,
    floor_gate_fail_open,
    judge_fail_open,
    judge_grades_own_rung,
    judge_rung_without_model,
    kind_admitted_and_forbidden,
    map_admits_every_tool_call,
    map_kind_unused,
    map_rule_shadowed,
    meaning_model_fail_open,
    no_shortcut_rejections,
    permissive_threshold,
    property_admits_nothing,
    property_unused_by_chains,
    repeated_list_entry,
    rung_serves_without_gated_property,
    shortcut_never_matches,
    subprocess_without_timeout,
    tone_instruction,
    unreachable_rung,
    untrusted_kind_admitted,
    untrusted_kind_unnamed,
    unused_suppression,
)



@attrs.frozen
class Rule:
    code: str
    module: ModuleType
    severity: str  # "error" or "warning"

    @property
    def name(self) -> str:
        """The module's name, which says what the rule detects."""
        return self.module.__name__.rsplit(".", 1)[-1]

    @property
    def summary(self) -> str:
        """The first line of the rule's docstring."""
        return (self.module.__doc__ or "").strip().splitlines()[0]

    @property
    def page(self) -> str:
        """The rule's docs page, relative to docs/."""
        return f"lint/{self.code}.md"


# Rules over the IR, run in this order.
RULES = (
    Rule("ADM001", default_yes, "error"),
    Rule("ADM002", untrusted_kind_admitted, "error"),
    Rule("ADM003", kind_admitted_and_forbidden, "error"),
    Rule("ADM004", no_shortcut_rejections, "warning"),
    Rule("ADM005", untrusted_kind_unnamed, "warning"),
    Rule("ADM006", tone_instruction, "warning"),
    Rule("ADM007", confirmatory_judge, "warning"),
    Rule("ADM008", judge_grades_own_rung, "error"),
    Rule("ADM009", floor_gate_fail_open, "warning"),
    Rule("ADM010", costly_gate_first, "warning"),
    Rule("ADM011", subprocess_without_timeout, "warning"),
    Rule("ADM012", property_unused_by_chains, "warning"),
    Rule("ADM013", unreachable_rung, "warning"),
    Rule("ADM014", consistency_too_few_samples, "warning"),
    Rule("ADM015", empty_rubric, "error"),
    Rule("ADM016", empty_rung, "error"),
    Rule("ADM017", judge_rung_without_model, "warning"),
    Rule("ADM018", shortcut_never_matches, "warning"),
    Rule("ADM019", property_admits_nothing, "warning"),
    Rule("ADM020", repeated_list_entry, "warning"),
    Rule("ADM021", permissive_threshold, "warning"),
    Rule("ADM022", rung_serves_without_gated_property, "warning"),
    Rule("ADM030", map_kind_unused, "warning"),
    Rule("ADM031", map_rule_shadowed, "warning"),
    Rule("ADM032", map_admits_every_tool_call, "error"),
    Rule("ADM033", final_answer_mapped_otherwise, "error"),
    Rule("ADM034", admissibility_unprovable_by_conversation, "warning"),
    Rule("ADM040", judge_fail_open, "warning"),
    Rule("ADM041", meaning_model_fail_open, "warning"),
)
# Checks the suppression comments against what the rules above reported.
UNUSED_SUPPRESSION = Rule("ADM100", unused_suppression, "warning")
ALL_RULES = RULES + (UNUSED_SUPPRESSION,)
BY_CODE = {rule.code: rule for rule in ALL_RULES}
