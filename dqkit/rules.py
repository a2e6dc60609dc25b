"""The rule model shared by detection, repair, Daisy and dedup (BigDansing §2.1, §3).

Three kinds of rule:

* ``FunctionalDependency`` -- ``zipcode -> city`` or ``zip, street -> city, state``.
* ``DenialConstraint`` -- ``not(t1.salary > t2.salary and t1.rate < t2.rate)`` over one or two
  tuples, with predicates ``=, !=, <, <=, >, >=`` between attributes or against constants. HoloClean's
  form ``t1&t2&EQ(t1.zip,t2.zip)&IQ(t1.city,t2.city)`` is accepted too.
* ``UDFRule`` -- a BigDansing job: Scope, Block, Iterate, Detect and GenFix as vectorised Python
  callables wired together by labels (App. A), see ``Job``.

Rule text is parsed by a small hand-written tokenizer and parser; nothing is ever evaluated.
Every error is a ``RuleError`` naming the rule, the position (1-based column) and the cause.
``validate_rules`` checks rules against a table schema (unknown columns, comparisons between types
that cannot be ordered) without running any Spark job.

NULL semantics: a predicate whose operand is NULL is false, as in SQL. A DC is violated only when all
its predicates are true, so a tuple with NULL in an attribute a predicate reads never violates it.
"""
from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

from dqkit.errors import DqkitError, RuleError, UnknownColumnError

OPS = ("=", "!=", "<", "<=", ">", ">=")
ORDERING_OPS = ("<", "<=", ">", ">=")
# op such that (a op b) <=> (b FLIP[op] a)
FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
# op such that not(a op b) <=> (a NEGATE[op] b) (for non-NULL operands)
NEGATE = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}
_HOLOCLEAN_OPS = {"EQ": "=", "IQ": "!=", "LT": "<", "LTE": "<=", "GT": ">", "GTE": ">="}
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
        return _normalise(sw(self.left), self.op, sw(self.right))

    def negated(self) -> Predicate:
        return Predicate(self.left, NEGATE[self.op], self.right)


def _normalise(left: Operand, op: str, right: Operand) -> Predicate:
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


Rule = Union[FunctionalDependency, DenialConstraint, "UDFRule"]


# ------------------------------------------------------------------------------------------ tokenizer
@dataclass(frozen=True)
class _Tok:
    kind: str  # name, num, str, op, punct, end
    value: Any
    pos: int  # 0-based offset in the rule text


_TOKEN_RE = re.compile(r"""
    (?P<ws>\s+)
  | (?P<num>[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)
  | (?P<str>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<op><=|>=|!=|<>|==|=|<|>|≤|≥|≠)
  | (?P<arrow>->|→)
  | (?P<punct>[(),.&¬∧!])
  | (?P<name>[A-Za-z_][A-Za-z_0-9]*|`(?:[^`]|``)+`)
""", re.VERBOSE)
_OP_ALIASES = {"==": "=", "<>": "!=", "≤": "<=", "≥": ">=", "≠": "!="}


def _tokenize(text: str, rule: str) -> list[_Tok]:
    toks: list[_Tok] = []
    i = 0
    while i < len(text):
        m = _TOKEN_RE.match(text, i)
        if m is None:
            raise _err(rule, text, i, f"unexpected character {text[i]!r}")
        kind = m.lastgroup
        s = m.group()
        if kind == "num":
            # a sign directly after a name/number/closing bracket is not part of a number
            if s[0] in "+-" and toks and toks[-1].kind in ("name", "num", "str") or (
                    s[0] in "+-" and toks and toks[-1].value == ")"):
                raise _err(rule, text, i, "arithmetic is not supported in rules")
            val: Any = float(s) if any(c in s for c in ".eE") else int(s)
            toks.append(_Tok("num", val, i))
        elif kind == "str":
            body = s[1:-1]
            val = re.sub(r"\\(.)", r"\1", body)
            toks.append(_Tok("str", val, i))
        elif kind == "op":
            toks.append(_Tok("op", _OP_ALIASES.get(s, s), i))
        elif kind == "arrow":
            toks.append(_Tok("arrow", "->", i))
        elif kind == "punct":
            toks.append(_Tok("punct", s, i))
        elif kind == "name":
            if s.startswith("`"):
                s = s[1:-1].replace("``", "`")
            toks.append(_Tok("name", s, i))
        i = m.end()
    toks.append(_Tok("end", None, len(text)))
    return toks


def _err(rule: str, text: str, pos: int, cause: str) -> RuleError:
    pointer = text + "\n" + " " * pos + "^"
    return RuleError(f"rule {rule!r}, column {pos + 1}: {cause}\n  {pointer}",
                     hint="FD: 'a, b -> c'; DC: \"not(t1.a > t2.a and t1.b < t2.b)\"; "
                          "HoloClean: 't1&t2&EQ(t1.a,t2.a)&IQ(t1.b,t2.b)'")


class _Parser:
    def __init__(self, text: str, rule: str) -> None:
        self.text, self.rule = text, rule
        self.toks = _tokenize(text, rule)
        self.i = 0

    @property
    def tok(self) -> _Tok:
        return self.toks[self.i]

    def fail(self, cause: str, tok: _Tok | None = None) -> RuleError:
        return _err(self.rule, self.text, (tok or self.tok).pos, cause)

    def take(self, kind: str, value: Any = None) -> _Tok:
        t = self.tok
        if t.kind != kind or (value is not None and t.value != value):
            want = repr(value) if value is not None else kind
            got = "end of rule" if t.kind == "end" else repr(t.value)
            raise self.fail(f"expected {want}, found {got}")
        self.i += 1
        return t

    def accept(self, kind: str, value: Any = None) -> bool:
        t = self.tok
        if t.kind == kind and (value is None or (isinstance(t.value, str) and t.value.lower() == value)):
            self.i += 1
            return True
        return False

    # ---- operands
    def operand(self) -> Operand:
        t = self.tok
        if t.kind == "num" or t.kind == "str":
            self.i += 1
            return Const(t.value)
        if t.kind == "name":
            m = re.fullmatch(r"t([12])", t.value)
            if m is None:
                raise self.fail(f"expected t1.<column>, t2.<column> or a constant, found {t.value!r}")
            self.i += 1
            self.take("punct", ".")
            col = self.take("name")
            return Attr(int(m.group(1)), col.value)
        got = "end of rule" if t.kind == "end" else repr(t.value)
        raise self.fail(f"expected an attribute (t1.<column>) or a constant, found {got}")

    def predicate(self) -> tuple[Predicate, int]:
        start = self.tok
        left = self.operand()
        if self.tok.kind != "op":
            got = "end of rule" if self.tok.kind == "end" else repr(self.tok.value)
            raise self.fail(f"expected a comparison (=, !=, <, <=, >, >=), found {got}")
        op = self.take("op").value
        right = self.operand()
        if isinstance(left, Const) and isinstance(right, Const):
            raise self.fail("a predicate must read at least one attribute", start)
        return _normalise(left, op, right), start.pos

    def conj_sep(self) -> bool:
        if self.accept("name", "and") or self.accept("punct", "∧"):
            return True
        if self.tok.kind == "punct" and self.tok.value == "&":
            self.i += 1
            self.accept("punct", "&")
            return True
        return False

    # ---- rule forms
    def dc(self) -> tuple[list[tuple[Predicate, int]], bool]:
        """``not( p and p ... )``; returns predicates with positions."""
        if not (self.accept("name", "not") or self.accept("punct", "¬") or self.accept("punct", "!")):
            raise self.fail("expected 'not('")
        self.take("punct", "(")
        preds = [self.predicate()]
        while self.conj_sep():
            preds.append(self.predicate())
        if self.tok.kind == "name" and self.tok.value.lower() == "or":
            raise self.fail("'or' is not allowed: a denial constraint is a conjunction")
        self.take("punct", ")")
        self.take("end")
        return preds, False

    def holoclean(self) -> tuple[list[tuple[Predicate, int]], bool]:
        declared: list[str] = []
        while self.tok.kind == "name" and re.fullmatch(r"t\d+", self.tok.value):
            t = self.take("name")
            if t.value not in ("t1", "t2"):
                raise self.fail("only rules over t1 and t2 are supported", t)
            declared.append(t.value)
            self.take("punct", "&")
        preds = []
        while True:
            t = self.tok
            if t.kind != "name" or t.value.upper() not in _HOLOCLEAN_OPS:
                got = "end of rule" if t.kind == "end" else repr(t.value)
                raise self.fail(f"expected EQ, IQ, LT, LTE, GT or GTE, found {got}")
            self.i += 1
            op = _HOLOCLEAN_OPS[t.value.upper()]
            self.take("punct", "(")
            left = self.operand()
            self.take("punct", ",")
            right = self.operand()
            self.take("punct", ")")
            if isinstance(left, Const) and isinstance(right, Const):
                raise self.fail("a predicate must read at least one attribute", t)
            preds.append((_normalise(left, op, right), t.pos))
            if self.tok.kind == "end":
                break
            self.take("punct", "&")
        return preds, "t2" in declared

    def fd(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        def names() -> list[str]:
            out = [self.take("name").value]
            while self.accept("punct", ","):
                out.append(self.take("name").value)
            return out
        lhs = names()
        self.take("arrow")
        rhs = names()
        self.take("end")
        return tuple(lhs), tuple(rhs)


_NAME_RE = re.compile(r"^\s*([A-Za-z_\u0370-\u03ff][\w\u0370-\u03ff.\-]*)\s*:(?!=)\s*(.*)$", re.S)


def parse_rule(text: str, name: str | None = None) -> FunctionalDependency | DenialConstraint:
    """Parse one FD, DC or HoloClean-format rule (an optional ``name:`` prefix names it)."""
    if not isinstance(text, str):
        raise RuleError(f"rule {name!r}: expected rule text, got {type(text).__name__}")
    body = text.strip()
    m = _NAME_RE.match(body)
    if m and name is None:
        name, body = m.group(1), m.group(2).strip()
    elif m and name is not None and not re.match(r"^\s*t[12]\s*[.&]", body):
        body = m.group(2).strip()
    name = name or body
    if not body:
        raise RuleError(f"rule {name!r}: empty rule")
    p = _Parser(body, name)
    first = p.tok
    if first.kind == "name" and re.fullmatch(r"t\d+", first.value) and len(p.toks) > 1 and p.toks[1].value == "&":
        preds, declared_t2 = p.holoclean()
        form = "holoclean"
    elif (first.kind == "name" and first.value.lower() == "not") or first.value in ("¬", "!"):
        preds, declared_t2 = p.dc()
        form = "dc"
    elif any(t.kind == "arrow" for t in p.toks):
        lhs, rhs = p.fd()
        check_rule_size(name, len(lhs) + len(rhs), "attributes")
        dup = [c for c in rhs if c in lhs]
        if dup:
            raise RuleError(f"rule {name!r}: attribute {dup[0]!r} is on both sides of the FD",
                            hint="an FD X -> Y needs Y disjoint from X")
        return FunctionalDependency(name, lhs, rhs, text.strip())
    else:
        got = repr(first.value) if first.kind != "end" else "end of rule"
        raise p.fail(f"cannot tell the rule form from {got}: expected 'not(...)', "
                     f"'t1&t2&...' or 'a, b -> c'")
    return _build_dc(name, preds, declared_t2, body, form, text.strip())


def check_rule_size(name: str, size: int, what: str = "predicates") -> None:
    """Refuse a rule with more than ``MAX_PREDICATES`` predicates (DC) or attributes (FD)."""
    if size > MAX_PREDICATES:
        raise RuleError(f"rule {name!r} has {size} {what}; dqkit accepts at most {MAX_PREDICATES} "
                        f"{what} in one rule", hint="a rule that large is usually generated text gone wrong: "
                        "check how it was written, or split what it checks into smaller rules")


def _build_dc(name: str, preds: list[tuple[Predicate, int]], declared_t2: bool, body: str, form: str,
              text: str) -> DenialConstraint:
    check_rule_size(name, len(preds))
    uses_t2 = any(2 in p.tuples for p, _ in preds)
    if form == "holoclean" and declared_t2 and not uses_t2:
        raise RuleError(f"rule {name!r}: the rule declares t2 but no predicate reads t2",
                        hint="add a predicate on t2 (e.g. EQ(t1.zip,t2.zip)) or declare only t1")
    if uses_t2 and not any(p.is_cross for p, _ in preds):
        raise RuleError(
            f"rule {name!r}: no predicate relates t1 to t2, so every pair of a t1-row and a t2-row "
            f"would be a violation (a cartesian product)",
            hint="add a predicate comparing t1 and t2, e.g. t1.zip = t2.zip, or write a one-tuple rule")
    seen = set()
    uniq = []
    for p, _ in preds:
        if p not in seen:
            seen.add(p)
            uniq.append(p)
    return DenialConstraint(name, tuple(uniq), 2 if uses_t2 else 1, text)


def parse_rules(text: str) -> list[FunctionalDependency | DenialConstraint]:
    """Plain-text rules: one per line, ``#`` comments and blank lines ignored, optional ``name:``."""
    rules = []
    for lineno, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        try:
            rules.append(parse_rule(s))
        except RuleError as exc:
            raise RuleError(f"line {lineno}: {exc.message}", hint=exc.hint) from None
    _check_unique(rules)
    return rules


def _check_unique(rules: Sequence[Any]) -> None:
    names = [r.name for r in rules]
    dups = sorted({n for n in names if names.count(n) > 1})
    if dups:
        raise RuleError(f"rule name {dups[0]!r} is used more than once", hint="give every rule its own name")


def load_rules(path: str | os.PathLike) -> list[FunctionalDependency | DenialConstraint]:
    """Read rules from a YAML file (``.yaml``/``.yml``) or a plain-text file (one rule per line).

    YAML forms: ``rules: [{name: phiF, rule: "zipcode -> city"}, ...]``, a list of strings or of
    such mappings, or a mapping ``name: rule``.
    """
    from dqkit.filecheck import read_text

    p = os.fspath(path)
    # missing, a folder, unreadable, empty, binary or not UTF-8: refused naming the file (no Spark needed)
    text = read_text(p, "the rules file", error=RuleError,
                     hint="give a plain-text (one rule per line) or YAML rules file saved as UTF-8")
    if p.endswith((".yaml", ".yml")):
        return rules_from_yaml(text, p)
    return parse_rules(text)


def rules_from_yaml(text: str, source: str = "<yaml>") -> list[FunctionalDependency | DenialConstraint]:
    """Rules from YAML text (see ``load_rules``)."""
    import yaml

    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise RuleError(f"{source}: not valid YAML: {exc}") from None
    if isinstance(doc, Mapping) and "rules" in doc:
        doc = doc["rules"]
    items: list[tuple[str | None, Any]] = []
    if isinstance(doc, Mapping):
        items = [(str(k), v) for k, v in doc.items()]
    elif isinstance(doc, list):
        for i, entry in enumerate(doc):
            if isinstance(entry, str):
                items.append((None, entry))
            elif isinstance(entry, Mapping) and "rule" in entry:
                items.append((None if entry.get("name") is None else str(entry["name"]), entry["rule"]))
            else:
                raise RuleError(f"{source}: entry {i + 1} must be a rule string or {{name: ..., rule: ...}}")
    elif doc is None:
        items = []
    else:
        raise RuleError(f"{source}: expected a list of rules or a 'rules:' key")
    rules = [parse_rule(r if isinstance(r, str) else r, n) for n, r in items]
    _check_unique(rules)
    return rules


def as_rules(rules: Any) -> list[Rule]:
    """Normalise the ways users give rules: a rule, rule text, a list of either, a mapping
    ``name -> text`` or a path to a rules file."""
    if isinstance(rules, (FunctionalDependency, DenialConstraint, UDFRule)):
        return [rules]
    if isinstance(rules, os.PathLike):
        return list(load_rules(rules))
    if isinstance(rules, str):
        if "\n" not in rules and os.path.isfile(rules):
            return list(load_rules(rules))
        return list(parse_rules(rules))
    if isinstance(rules, Mapping):
        out: list[Rule] = [parse_rule(v, str(k)) for k, v in rules.items()]
    else:
        out = []
        for r in rules:
            out.extend(as_rules(r) if not isinstance(r, str) else [parse_rule(r)])
    _check_unique(out)
    return out


# ----------------------------------------------------------------------------------------- validation
_NUMERIC = ("byte", "short", "integer", "long", "int", "bigint", "smallint", "tinyint", "float", "double", "decimal")


def type_class(type_name: str) -> str:
    """Comparison class of a Spark type name: numeric, string, date, timestamp, boolean or other."""
    t = type_name.lower()
    if t.startswith(_NUMERIC):
        return "numeric"
    if t in ("string",) or t.startswith(("varchar", "char")):
        return "string"
    if t == "date":
        return "date"
    if t.startswith("timestamp"):
        return "timestamp"
    if t == "boolean":
        return "boolean"
    return "other"


def _const_class(c: Const) -> str:
    return "string" if isinstance(c.value, str) else "numeric"


def validate_rules(rules: Sequence[Rule], types: Mapping[str, str], key: str | None = None) -> None:
    """Check rules against a schema (column -> Spark type name) before any Spark job runs.

    Raises ``UnknownColumnError`` for a column the table lacks and ``RuleError`` for comparisons
    between types that cannot be compared or ordered.
    """
    cols = list(types)
    for rule in rules:
        if isinstance(rule, UDFRule):
            continue
        if isinstance(rule, FunctionalDependency):
            check_rule_size(rule.name, len(rule.lhs) + len(rule.rhs), "attributes")
        else:
            check_rule_size(rule.name, len(rule.predicates))
        for c in rule.columns:
            if c not in types:
                close = [x for x in cols if x.lower() == c.lower()]
                raise UnknownColumnError(
                    f"rule {rule.name!r}: unknown column {c!r}",
                    hint=(f"did you mean {close[0]!r}? " if close else "") + f"columns: {', '.join(cols)}")
        if isinstance(rule, FunctionalDependency):
            for c in rule.columns:
                if type_class(types[c]) == "other":
                    raise RuleError(f"rule {rule.name!r}: column {c!r} has type {types[c]}, which an FD "
                                    f"cannot compare", hint="cast it to a string first")
            continue
        for p in rule.predicates:
            lt = type_class(types[p.left.column])
            if isinstance(p.right, Attr):
                rt = type_class(types[p.right.column])
                rdesc = f"{p.right} ({types[p.right.column]})"
            else:
                rt = _const_class(p.right)
                rdesc = f"the constant {p.right}"
                if isinstance(p.right.value, float) and not math.isfinite(p.right.value):
                    raise RuleError(f"rule {rule.name!r}: predicate '{p}': non-finite constant")
                if rt == "string" and lt in ("date", "timestamp"):
                    rt = lt  # ISO date/timestamp literals compare with temporal columns
            ldesc = f"{p.left} ({types[p.left.column]})"
            if lt == "other" or rt == "other":
                raise RuleError(f"rule {rule.name!r}: predicate '{p}': {ldesc} and {rdesc} cannot be "
                                f"compared", hint="only numbers, strings, dates, timestamps and booleans")
            if lt != rt:
                raise RuleError(f"rule {rule.name!r}: predicate '{p}' compares {ldesc} with {rdesc}: "
                                f"types that cannot be compared", hint="cast one side so both have the same type")
            if p.op in ORDERING_OPS and lt == "boolean":
                raise RuleError(f"rule {rule.name!r}: predicate '{p}': booleans cannot be ordered",
                                hint="use = or != on boolean columns")
    if key is not None and key not in types:
        raise UnknownColumnError(f"unknown key column {key!r}", hint=f"columns: {', '.join(cols)}")


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


def rule_text(rule: Rule) -> str:
    """The canonical text of a rule (round-trips through ``parse_rule`` for FDs and DCs)."""
    return str(rule)


__all__ = [
    "Attr", "Const", "Predicate", "DenialConstraint", "FunctionalDependency", "UDFRule", "Job",
    "Operator", "parse_rule", "parse_rules", "load_rules", "rules_from_yaml", "as_rules",
    "validate_rules", "check_rule_size", "type_class", "OPS", "NEGATE", "FLIP", "MAX_PREDICATES", "DqkitError",
]
