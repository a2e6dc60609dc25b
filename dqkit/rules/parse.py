"""Rule text to rules: a small hand-written tokenizer and parser (nothing is evaluated), rule files and YAML."""
from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dqkit.errors import RuleError
from dqkit.rules.model import (Attr, Const, DenialConstraint, FunctionalDependency, HOLOCLEAN_OPS, MAX_PREDICATES,
    Operand, Predicate, normalised_predicate)
from dqkit.rules.udf import UDFRule, Rule


# ------------------------------------------------------------------------------------------ tokenizer
@dataclass(frozen=True)
class _Tok:
    kind: str  # name, num, str, op, punct, end
    value: Any
    pos: int  # 0-based offset in the rule text
    quoted: bool = False  # a `backticked` name: a column, never a keyword (`not` -> b is an FD)


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
            quoted = s.startswith("`")
            if quoted:
                s = s[1:-1].replace("``", "`")
            toks.append(_Tok("name", s, i, quoted))
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
        return normalised_predicate(left, op, right), start.pos

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
            if t.kind != "name" or t.value.upper() not in HOLOCLEAN_OPS:
                got = "end of rule" if t.kind == "end" else repr(t.value)
                raise self.fail(f"expected EQ, IQ, LT, LTE, GT or GTE, found {got}")
            self.i += 1
            op = HOLOCLEAN_OPS[t.value.upper()]
            self.take("punct", "(")
            left = self.operand()
            self.take("punct", ",")
            right = self.operand()
            self.take("punct", ")")
            if isinstance(left, Const) and isinstance(right, Const):
                raise self.fail("a predicate must read at least one attribute", t)
            preds.append((normalised_predicate(left, op, right), t.pos))
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
    if first.kind == "name" and not first.quoted and re.fullmatch(r"t\d+", first.value) and len(p.toks) > 1 \
            and p.toks[1].value == "&":
        preds, declared_t2 = p.holoclean()
        form = "holoclean"
    elif (first.kind == "name" and not first.quoted and first.value.lower() == "not") or first.value in ("¬", "!"):
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
    from dqkit.io.filecheck import read_text

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
