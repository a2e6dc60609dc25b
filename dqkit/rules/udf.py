"""UDF rules: a BigDansing job (App. A) of the five logical operators, wired by labels."""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

from dqkit.errors import RuleError
from dqkit.rules.model import DenialConstraint, FunctionalDependency


# --------------------------------------------------------------------------------------- UDF rules
@dataclass(frozen=True)
class Operator:
    """One logical operator of a job: kind, callable, labels it reads, label it writes."""

    kind: str  # input, scope, block, iterate, detect, genfix
    fn: Any
    inputs: tuple[str, ...]
    output: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        if self.kind == "input":
            return "Input"
        f = self.fn
        return f"{self.kind.capitalize()}({getattr(f, '__name__', type(f).__name__) if callable(f) else f})"


class Job:
    """A BigDansing job (App. A, Listing 3): labelled data flows and the five logical operators.

    Callables are vectorised and run on executors, per batch (Scope, Block) or per block (Iterate,
    Detect, GenFix) through ``mapInPandas``/``applyInPandas``:

    * ``scope(pdf) -> pdf``: filter/project/replicate units; pass ``schema=`` (DDL) when it changes
      the columns. A list of column names is a projection.
    * ``block(pdf) -> Series`` of blocking keys, or a column name / list of names.
    * ``iterate(list_of_pdfs) -> pdf`` of candidate units, called once per block (or co-block when
      several blocked labels feed it); ``schema=`` gives its output columns. Its output must carry a
      ``tid`` column (the unit id). Missing: UCrossProduct inside each block.
    * ``detect(candidates) -> bool mask``: for ``input="pairs"`` candidates have ``tid_1, tid_2`` and
      ``<col>_1, <col>_2``; for ``input="units"`` they are units (a violation of one unit).
    * ``genfix(violations) -> pdf`` with columns ``tid, attr, op`` and ``rhs_tid, rhs_attr`` or
      ``constant`` (strings); missing: violations only.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.operators: list[Operator] = []

    def _add(self, op: Operator) -> Job:
        self.operators.append(op)
        return self

    def add_input(self, table: Any, *labels: str, key: str | None = None) -> Job:
        """A dataset and the labels of the data flows over it (``tid`` = ``key`` or a fingerprint)."""
        if not labels:
            raise RuleError(f"job {self.name!r}: add_input needs at least one label")
        return self._add(Operator("input", table, (), None, {"labels": labels, "key": key}))

    def add_scope(self, fn: Callable[..., Any] | Sequence[str], label: str, schema: str | None = None) -> Job:
        return self._add(Operator("scope", fn, (label,), label, {"schema": schema}))

    def add_block(self, fn: Callable[..., Any] | str | Sequence[str], label: str) -> Job:
        return self._add(Operator("block", fn, (label,), label))

    def add_iterate(self, out_label: str, fn: Callable[..., Any], *in_labels: str, schema: str) -> Job:
        return self._add(Operator("iterate", fn, tuple(in_labels), out_label, {"schema": schema}))

    def add_detect(self, fn: Callable[..., Any], label: str, input: str = "pairs") -> Job:
        if input not in ("pairs", "units"):
            raise RuleError(f"job {self.name!r}: Detect input must be 'pairs' or 'units', not {input!r}")
        return self._add(Operator("detect", fn, (label,), None, {"input": input}))

    def add_genfix(self, fn: Callable[..., Any], label: str) -> Job:
        return self._add(Operator("genfix", fn, (label,), None))

    def validate(self) -> None:
        """R7: at least one Detect, and every label an operator reads is defined before it."""
        defined: set[str] = set()
        detects = 0
        for pos, op in enumerate(self.operators, 1):
            if op.kind == "input":
                defined.update(op.options["labels"])
                continue
            for lab in op.inputs:
                if lab not in defined:
                    raise RuleError(f"job {self.name!r}, operator {pos} ({op.name}): undefined label {lab!r}",
                                    hint=f"defined labels: {', '.join(sorted(defined)) or 'none'}; "
                                         f"add_input(table, {lab!r}) or an Iterate writing {lab!r} first")
            if op.kind == "iterate":
                defined.add(op.output)  # type: ignore[arg-type]
            if op.kind == "detect":
                detects += 1
            if not (callable(op.fn) or (op.kind in ("scope", "block") and
                                        (isinstance(op.fn, str) or isinstance(op.fn, (list, tuple))))):
                raise RuleError(f"job {self.name!r}, operator {pos} ({op.kind}): not callable")
        if detects == 0:
            raise RuleError(f"job {self.name!r} has no Detect operator",
                            hint="add_detect(fn, label): a job must decide what a violation is")
        genfix_labels = [op.inputs[0] for op in self.operators if op.kind == "genfix"]
        detect_labels = {op.inputs[0] for op in self.operators if op.kind == "detect"}
        for lab in genfix_labels:
            if lab not in detect_labels:
                raise RuleError(f"job {self.name!r}: GenFix on label {lab!r} has no Detect on that label")

    def rule(self) -> UDFRule:
        self.validate()
        return UDFRule(self.name, tuple(self.operators))


@dataclass(frozen=True)
class UDFRule:
    """A validated ``Job``: a procedural rule made of the five logical operators."""

    name: str
    operators: tuple[Operator, ...]

    kind = "udf"
    columns: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"job {self.name}: " + " -> ".join(op.name for op in self.operators if op.kind != "input")


#: any rule dqkit takes
Rule = Union[FunctionalDependency, DenialConstraint, UDFRule]


def rule_text(rule: Rule) -> str:
    """The canonical text of a rule (round-trips through ``parse_rule`` for FDs and DCs)."""
    return str(rule)
