"""The rule model: attributes, constants, predicates, denial constraints and functional dependencies."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union


OPS = ("=", "!=", "<", "<=", ">", ">=")
ORDERING_OPS = ("<", "<=", ">", ">=")
# op such that (a op b) <=> (b FLIP[op] a)
FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
# op such that not(a op b) <=> (a NEGATE[op] b) (for non-NULL operands)
NEGATE = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}
HOLOCLEAN_OPS = {"EQ": "=", "IQ": "!=", "LT": "<", "LTE": "<=", "GT": ">", "GTE": ">="}
# The largest rule dqkit accepts: predicates of a DC, attributes of an FD. Detection compiles a rule
# into one Spark expression (a balanced conjunction); a thousand predicates plan in well under a
# second, while rules of tens of thousands (generated text gone wrong) take Spark's planner minutes.
MAX_PREDICATES = 1000


# --------------------------------------------------------------------------------------------- model
@dataclass(frozen=True)
class Attr:
    """``t{tuple}.{column}``: an attribute of the first (1) or second (2) tuple of a rule."""

    tuple: int
    column: str

    def __str__(self) -> str:
        return f"t{self.tuple}.{self.column}"


@dataclass(frozen=True)
class Const:
    """A constant operand (number or string)."""

    value: Union[int, float, str]

    def __str__(self) -> str:
        if isinstance(self.value, str):
            return "'" + self.value.replace("\\", "\\\\").replace("'", "\\'") + "'"
        return repr(self.value)


Operand = Union[Attr, Const]


@dataclass(frozen=True)
class Predicate:
    """``left op right``; after normalisation ``left`` is an ``Attr`` and, when both operands are
    attributes of different tuples, ``left`` is on t1."""

    left: Attr
    op: str
    right: Operand

    def __str__(self) -> str:
        return f"{self.left} {self.op} {self.right}"

    @property
    def tuples(self) -> frozenset[int]:
        ts = {self.left.tuple}
        if isinstance(self.right, Attr):
            ts.add(self.right.tuple)
        return frozenset(ts)

    @property
    def is_cross(self) -> bool:
        """True when the predicate relates t1 to t2."""
        return len(self.tuples) == 2

    def swapped(self) -> Predicate:
        """The same predicate with t1 and t2 exchanged (normalised)."""
        def sw(a: Operand) -> Operand:
            return Attr(3 - a.tuple, a.column) if isinstance(a, Attr) else a
        return normalised_predicate(sw(self.left), self.op, sw(self.right))

    def negated(self) -> Predicate:
        return Predicate(self.left, NEGATE[self.op], self.right)


def normalised_predicate(left: Operand, op: str, right: Operand) -> Predicate:
    if isinstance(left, Const) and isinstance(right, Attr):
        left, op, right = right, FLIP[op], left
    if isinstance(left, Attr) and isinstance(right, Attr) and left.tuple == 2 and right.tuple == 1:
        left, op, right = right, FLIP[op], left
    assert isinstance(left, Attr)
    return Predicate(left, op, right)


@dataclass(frozen=True)
class DenialConstraint:
    """``not(p1 and ... and pm)`` over one tuple (only t1) or two distinct tuples t1, t2."""

    name: str
    predicates: tuple[Predicate, ...]
    arity: int = 2
    text: str = ""

    kind = "dc"

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(a.column for p in self.predicates for a in (p.left, p.right)
                                   if isinstance(a, Attr)))

    @property
    def cross_predicates(self) -> tuple[Predicate, ...]:
        return tuple(p for p in self.predicates if p.is_cross)

    def side_predicates(self, t: int) -> tuple[Predicate, ...]:
        """Predicates that read only tuple ``t`` (filters of the Scope on that side)."""
        return tuple(p for p in self.predicates if p.tuples == frozenset({t}))

    @property
    def symmetric(self) -> bool:
        """True when swapping t1 and t2 gives the same rule: then (a,b) violates iff (b,a) does and
        detection reports each unordered pair once (UCrossProduct, R15/R16)."""
        if self.arity == 1:
            return False
        return set(self.predicates) == {p.swapped() for p in self.predicates}

    def __str__(self) -> str:
        return "not(" + " and ".join(str(p) for p in self.predicates) + ")"


@dataclass(frozen=True)
class FunctionalDependency:
    """``lhs -> rhs``: tuples that agree on every lhs attribute agree on every rhs attribute."""

    name: str
    lhs: tuple[str, ...]
    rhs: tuple[str, ...]
    text: str = ""

    kind = "fd"
    arity = 2
    symmetric = True

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.lhs + self.rhs))

    def as_denial_constraints(self) -> list[DenialConstraint]:
        """One DC per rhs attribute: ``not(t1.X = t2.X and t1.Y != t2.Y)`` (Daisy §3.1)."""
        out = []
        for r in self.rhs:
            preds = tuple(Predicate(Attr(1, a), "=", Attr(2, a)) for a in self.lhs)
            preds += (Predicate(Attr(1, r), "!=", Attr(2, r)),)
            name = self.name if len(self.rhs) == 1 else f"{self.name}[{r}]"
            out.append(DenialConstraint(name, preds, 2, str(self)))
        return out

    def __str__(self) -> str:
        return ", ".join(self.lhs) + " -> " + ", ".join(self.rhs)
