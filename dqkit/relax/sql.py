"""The query subset Daisy cleans (§5 template, R14), parsed with sqlglot into a small plan.

``SELECT <list> FROM t [alias] [JOIN u [alias] ON t.a = u.b [AND ...]] ... [, v]
[WHERE <col> <op> <value> [AND|OR ...]] [GROUP BY <cols>]`` with op in =, !=, <>, <, <=, >, >= and
aggregates COUNT/SUM/AVG/MIN/MAX in the select list. The text is parsed into an AST and walked; it is
never evaluated or handed to Spark. Anything outside the subset raises ``UnsupportedQueryError``
naming the construct (a subquery, ORDER BY, LIKE, a function, ...); an unknown table or column raises
``UnknownTableError`` / ``UnknownColumnError`` before any Spark job.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

from dqkit.errors import DqkitError, UnknownColumnError, UnknownTableError


class UnsupportedQueryError(DqkitError):
    """A query outside Daisy's subset; the message names the construct."""


@dataclass(frozen=True)
class ColRef:
    """A column of one table of the query, by the table's alias."""

    alias: str
    column: str

    def __str__(self) -> str:
        return f"{self.alias}.{self.column}"


@dataclass(frozen=True)
class Pred:
    """``column op value`` (R14)."""

    col: ColRef
    op: str
    value: Any

    def __str__(self) -> str:
        v = f"'{self.value}'" if isinstance(self.value, str) else repr(self.value)
        return f"{self.col} {self.op} {v}"


@dataclass(frozen=True)
class BoolOp:
    """``and`` / ``or`` of conditions."""

    op: str
    items: tuple[Cond, ...]

    def __str__(self) -> str:
        return "(" + f" {self.op.upper()} ".join(map(str, self.items)) + ")"


Cond = Union[Pred, BoolOp]


@dataclass(frozen=True)
class SelectItem:
    """A projected column (``func`` None) or an aggregate ``func(col)`` / ``count(*)`` (col None)."""

    name: str
    col: ColRef | None
    func: str | None = None


@dataclass(frozen=True)
class JoinCond:
    left: ColRef
    right: ColRef

    def __str__(self) -> str:
        return f"{self.left} = {self.right}"


@dataclass(frozen=True)
class Query:
    """A parsed query: tables by alias, equi-join conditions, the where tree, the select list."""

    text: str
    tables: tuple[tuple[str, str], ...]  # (alias, table name), FROM order
    joins: tuple[JoinCond, ...]
    where: Cond | None
    select: tuple[SelectItem, ...]
    group_by: tuple[ColRef, ...] = ()
    star: bool = False
    columns_used: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def aliases(self) -> list[str]:
        return [a for a, _ in self.tables]

    def table_of(self, alias: str) -> str:
        return dict(self.tables)[alias]

    def where_columns(self) -> set[ColRef]:
        out: set[ColRef] = set()

        def walk(c: Cond | None) -> None:
            if isinstance(c, Pred):
                out.add(c.col)
            elif isinstance(c, BoolOp):
                for i in c.items:
                    walk(i)
        walk(self.where)
        return out

    def projected_columns(self) -> list[ColRef]:
        out = [s.col for s in self.select if s.col is not None]
        return list(dict.fromkeys(out + list(self.group_by)))

    @property
    def aggregated(self) -> bool:
        return bool(self.group_by) or any(s.func for s in self.select)


_OPS = {"EQ": "=", "NEQ": "!=", "LT": "<", "LTE": "<=", "GT": ">", "GTE": ">="}
_AGGS = {"Count": "count", "Sum": "sum", "Avg": "avg", "Min": "min", "Max": "max"}
_ALLOWED_SELECT_ARGS = {"expressions", "from", "from_", "joins", "where", "group", "kind"}
_NAMES = {"order": "ORDER BY", "limit": "LIMIT", "offset": "OFFSET", "having": "HAVING", "distinct": "DISTINCT",
          "with": "WITH (a common table expression)", "windows": "WINDOW", "qualify": "QUALIFY",
          "laterals": "LATERAL VIEW", "sort": "SORT BY", "cluster": "CLUSTER BY", "distribute": "DISTRIBUTE BY",
          "into": "INTO", "hint": "a hint", "settings": "SETTINGS", "pivots": "PIVOT", "locks": "FOR UPDATE"}


def _unsupported(what: str, node: Any = None) -> UnsupportedQueryError:
    near = ""
    if node is not None:
        try:
            near = f" (at: {node.sql(dialect='spark')[:80]})"
        except Exception:  # noqa: BLE001 - a description only
            near = ""
    return UnsupportedQueryError(
        f"unsupported SQL construct: {what}{near}",
        hint="Daisy cleans SELECT cols FROM t [JOIN u ON t.a = u.b] [WHERE col op value AND/OR ...] "
             "[GROUP BY cols]; op is =, !=, <, <=, >, >=")


def _node_name(node: Any) -> str:
    from sqlglot import exp

    special = {exp.Subquery: "a subquery", exp.Like: "LIKE", exp.ILike: "ILIKE", exp.In: "IN",
               exp.Between: "BETWEEN", exp.Is: "IS [NOT] NULL", exp.Not: "NOT", exp.Case: "CASE",
               exp.Union: "UNION", exp.Exists: "EXISTS", exp.Cast: "CAST", exp.Window: "a window function",
               exp.Add: "arithmetic (+)", exp.Sub: "arithmetic (-)", exp.Mul: "arithmetic (*)",
               exp.Div: "arithmetic (/)", exp.Anonymous: "a function call"}
    for t, n in special.items():
        if isinstance(node, t):
            if t is exp.Anonymous:
                return f"the function {node.name}()"
            return n
    if isinstance(node, exp.Func):
        return f"the function {node.sql_name()}()"
    return type(node).__name__


def parse_query(text: str, schemas: Mapping[str, Sequence[str]]) -> Query:
    """Parse ``text`` against the registered tables (name -> column names); raise a ``DqkitError``
    naming the problem for anything outside the subset, an unknown table or an unknown column."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError

    if not isinstance(text, str) or not text.strip():
        raise UnsupportedQueryError("the query is empty", hint="write SELECT ... FROM ...")
    try:
        trees = sqlglot.parse(text, read="spark")
    except ParseError as e:
        first = str(e).splitlines()[0] if str(e) else "syntax error"
        raise UnsupportedQueryError(f"the query does not parse: {first}") from None
    trees = [t for t in trees if t is not None]
    if len(trees) != 1:
        raise _unsupported("more than one statement")
    tree = trees[0]
    if not isinstance(tree, exp.Select):
        raise _unsupported(f"a {type(tree).__name__.upper()} statement (only SELECT)", tree)
    for key, val in tree.args.items():
        if val in (None, [], False) or key in _ALLOWED_SELECT_ARGS:
            continue
        raise _unsupported(_NAMES.get(key, key.upper()), tree)
    if tree.args.get("kind"):
        raise _unsupported(str(tree.args["kind"]).upper(), tree)

    # ---- FROM and JOINs
    tables: list[tuple[str, str]] = []
    joins: list[JoinCond] = []
    frm = tree.args.get("from") or tree.args.get("from_")
    if frm is None:
        raise _unsupported("a SELECT without FROM", tree)

    def add_table(node: Any) -> str:
        if not isinstance(node, exp.Table):
            raise _unsupported(_node_name(node) if not isinstance(node, exp.Subquery) else "a subquery in FROM", node)
        if node.args.get("db") or node.args.get("catalog"):
            raise _unsupported("a qualified table name (use the registered name)", node)
        name = node.name
        if name not in schemas:
            close = [t for t in schemas if t.lower() == name.lower()]
            raise UnknownTableError(f"unknown table {name!r} in the query",
                                    hint=(f"did you mean {close[0]!r}? " if close else "")
                                    + f"registered tables: {', '.join(schemas) or 'none'}")
        alias = node.alias or name
        if alias in [a for a, _ in tables]:
            raise UnsupportedQueryError(f"the table alias {alias!r} is used twice",
                                        hint="give each table of a self-join its own alias")
        tables.append((alias, name))
        return alias

    add_table(frm.this)
    if frm.expressions:  # FROM a, b (old sqlglot form)
        for e in frm.expressions:
            add_table(e)
    pending_on: list[Any] = []
    for j in tree.args.get("joins") or []:
        side, kind = (j.args.get("side") or ""), (j.args.get("kind") or "")
        if str(side).upper() in ("LEFT", "RIGHT", "FULL") or str(kind).upper() in ("OUTER", "SEMI", "ANTI", "NATURAL"):
            raise _unsupported(f"{str(side or kind).upper()} JOIN (only inner equi-joins)", j)
        if j.args.get("using"):
            raise _unsupported("JOIN ... USING (write ON a.x = b.x)", j)
        add_table(j.this)
        if j.args.get("on") is not None:
            pending_on.append(j.args["on"])

    cols_of = {a: list(schemas[n]) for a, n in tables}

    def resolve(node: Any) -> ColRef:
        if not isinstance(node, exp.Column):
            raise _unsupported(_node_name(node), node)
        name, qual = node.name, node.table
        if qual:
            if qual not in cols_of:
                raise UnknownTableError(f"unknown table or alias {qual!r} in {node.sql()}",
                                        hint=f"tables of the query: {', '.join(cols_of)}")
            if name not in cols_of[qual]:
                raise UnknownColumnError(f"unknown column {name!r} of {qual}",
                                         hint=f"columns: {', '.join(cols_of[qual])}")
            return ColRef(qual, name)
        owners = [a for a, cs in cols_of.items() if name in cs]
        if not owners:
            every = sorted({c for cs in cols_of.values() for c in cs})
            close = [c for c in every if c.lower() == name.lower()]
            raise UnknownColumnError(f"unknown column {name!r}",
                                     hint=(f"did you mean {close[0]!r}? " if close else "") + f"columns: {', '.join(every)}")
        if len(owners) > 1:
            raise UnknownColumnError(f"column {name!r} is ambiguous: {', '.join(owners)} have it",
                                     hint=f"qualify it, e.g. {owners[0]}.{name}")
        return ColRef(owners[0], name)

    def literal(node: Any) -> Any:
        if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
            v = literal(node.this)
            return -v
        if isinstance(node, exp.Literal):
            if node.is_string:
                return node.this
            s = node.this
            try:
                return int(s)
            except ValueError:
                return float(s)
        if isinstance(node, exp.Boolean):
            return bool(node.this)
        raise _unsupported(_node_name(node) if not isinstance(node, exp.Column) else
                           "a comparison between two columns outside a join condition", node)

    def join_conds(node: Any) -> None:
        if isinstance(node, exp.Paren):
            return join_conds(node.this)
        if isinstance(node, exp.And):
            join_conds(node.left)
            join_conds(node.right)
            return
        if isinstance(node, exp.EQ) and isinstance(node.left, exp.Column) and isinstance(node.right, exp.Column):
            lc, rc = resolve(node.left), resolve(node.right)
            if lc.alias == rc.alias:
                raise _unsupported("a join condition within one table", node)
            joins.append(JoinCond(lc, rc))
            return
        raise _unsupported(f"{_node_name(node)} in a join condition (only equalities of columns joined by AND)", node)

    for on in pending_on:
        join_conds(on)

    # ---- WHERE
    def cond(node: Any) -> Cond:
        if isinstance(node, exp.Paren):
            return cond(node.this)
        if isinstance(node, (exp.And, exp.Or)):
            op = "and" if isinstance(node, exp.And) else "or"
            items: list[Cond] = []
            for side in (node.left, node.right):
                c = cond(side)
                items.extend(c.items if isinstance(c, BoolOp) and c.op == op else [c])
            return BoolOp(op, tuple(items))
        key = type(node).__name__
        if key in _OPS:
            left, right = node.left, node.right
            op = _OPS[key]
            if isinstance(left, exp.Column) and isinstance(right, exp.Column):
                lc, rc = resolve(left), resolve(right)
                if op == "=" and lc.alias != rc.alias:
                    joins.append(JoinCond(lc, rc))
                    return BoolOp("and", ())
                raise _unsupported("a comparison between two columns (only col op value)", node)
            if not isinstance(left, exp.Column) and not isinstance(right, exp.Column):
                odd = left if not isinstance(left, (exp.Literal, exp.Neg, exp.Boolean)) else right
                raise _unsupported(_node_name(odd), odd)
            if not isinstance(left, exp.Column):
                left, right = right, left
                op = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op)
            return Pred(resolve(left), op, literal(right))
        raise _unsupported(_node_name(node), node)

    where = None
    if tree.args.get("where") is not None:
        where = cond(tree.args["where"].this)
        if isinstance(where, BoolOp) and not where.items:
            where = None
        elif isinstance(where, BoolOp):
            kept = tuple(i for i in where.items if not (isinstance(i, BoolOp) and not i.items))
            where = BoolOp(where.op, kept) if len(kept) > 1 else (kept[0] if kept else None)

    if len(tables) > 1:
        linked = {tables[0][0]}
        changed = True
        while changed:
            changed = False
            for j in joins:
                a, b = j.left.alias, j.right.alias
                if (a in linked) != (b in linked):
                    linked |= {a, b}
                    changed = True
        missing = [a for a, _ in tables if a not in linked]
        if missing:
            raise _unsupported(f"a cartesian product: {', '.join(missing)} is joined by no equality")

    # ---- SELECT list and GROUP BY
    items: list[SelectItem] = []
    star = False
    for e in tree.expressions:
        alias = e.alias if isinstance(e, exp.Alias) else None
        node = e.this if isinstance(e, exp.Alias) else e
        if isinstance(node, exp.Star):
            star = True
            for a, _ in tables:
                for c in cols_of[a]:
                    items.append(SelectItem(c if len(tables) == 1 else f"{a}.{c}", ColRef(a, c)))
            continue
        if isinstance(node, exp.Column) and isinstance(node.this, exp.Star):
            star = True
            qual = node.table
            if qual not in cols_of:
                raise UnknownTableError(f"unknown table or alias {qual!r} in {node.sql()}")
            for c in cols_of[qual]:
                items.append(SelectItem(f"{qual}.{c}" if len(tables) > 1 else c, ColRef(qual, c)))
            continue
        if type(node).__name__ in _AGGS:
            func = _AGGS[type(node).__name__]
            arg = node.this
            if node.args.get("distinct") or isinstance(arg, exp.Distinct):
                raise _unsupported(f"{func.upper()}(DISTINCT ...)", node)
            if isinstance(arg, exp.Star) or arg is None:
                if func != "count":
                    raise _unsupported(f"{func.upper()}(*)", node)
                items.append(SelectItem(alias or "count", None, "count"))
            else:
                c = resolve(arg)
                items.append(SelectItem(alias or f"{func}({c.column})", c, func))
            continue
        if isinstance(node, exp.Column):
            c = resolve(node)
            default = c.column if len(tables) == 1 else f"{c.alias}.{c.column}"
            items.append(SelectItem(alias or default, c))
            continue
        raise _unsupported(_node_name(node) + " in the SELECT list", node)
    group: list[ColRef] = []
    if tree.args.get("group") is not None:
        g = tree.args["group"]
        for e in g.expressions:
            group.append(resolve(e))
        for key in ("rollup", "cube", "grouping_sets"):
            if g.args.get(key):
                raise _unsupported(f"GROUP BY {key.upper()}", g)
    if group or any(i.func for i in items):
        for i in items:
            if i.func is None and i.col not in group:
                raise UnsupportedQueryError(f"{i.col} is selected but neither grouped nor aggregated",
                                            hint="add it to GROUP BY or aggregate it")
    names = [i.name for i in items]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise UnsupportedQueryError(f"the output column {dup[0]!r} appears twice", hint="give one of them an alias")
    used: dict[str, set[str]] = {a: set() for a, _ in tables}
    for c in [i.col for i in items if i.col] + group + [j.left for j in joins] + [j.right for j in joins]:
        used[c.alias].add(c.column)
    q = Query(text, tuple(tables), tuple(joins), where, tuple(items), tuple(group), star, {})
    for c in q.where_columns():
        used[c.alias].add(c.column)
    return Query(text, tuple(tables), tuple(joins), where, tuple(items), tuple(group), star,
                 {a: tuple(sorted(v)) for a, v in used.items()})


def conjuncts_of(cond: Cond | None) -> list[Cond]:
    """The top-level AND items of a condition."""
    if cond is None:
        return []
    if isinstance(cond, BoolOp) and cond.op == "and":
        return list(cond.items)
    return [cond]


def aliases_of(cond: Cond) -> set[str]:
    if isinstance(cond, Pred):
        return {cond.col.alias}
    return set().union(*[aliases_of(i) for i in cond.items]) if cond.items else set()


# ------------------------------------------------------------------------------ read-only statements
_WRITE_NODES = ("Insert", "Update", "Delete", "Drop", "Create", "Alter", "Merge", "Command", "Into", "Set",
                "TruncateTable", "Use", "Grant", "Copy", "LoadData", "Cache", "Uncache", "Pragma")


def check_read_only_select(query: str) -> None:
    """``query`` is one read-only SELECT statement; anything else (DROP, INSERT, several statements,
    SELECT ... INTO) is refused before any table is read. The text is parsed, never executed."""
    text = query.strip() if isinstance(query, str) else ""
    hint = "dqkit query answers one read-only SELECT ... FROM ...; it never changes a table"
    if not text:
        raise UnsupportedQueryError("the query is empty", hint=hint)
    first = re.match(r"[(\s]*([A-Za-z]+)", text)
    if first is None or first.group(1).upper() not in ("SELECT", "WITH"):
        word = first.group(1).upper() if first else text[:20]
        raise UnsupportedQueryError(f"the query is a {word} statement, not a read-only SELECT", hint=hint)
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError

    try:
        trees = [t for t in sqlglot.parse(text, read="spark") if t is not None]
    except ParseError as exc:
        raise UnsupportedQueryError(f"the query does not parse: {str(exc).splitlines()[0] if str(exc) else exc}",
                                    hint=hint) from None
    if len(trees) != 1:
        raise UnsupportedQueryError(f"the query holds {len(trees)} statements, not one SELECT", hint=hint)
    tree = trees[0]
    bad = [getattr(exp, n) for n in _WRITE_NODES if hasattr(exp, n)]
    found = next((n for n in tree.walk() if isinstance(n, tuple(bad))), None) if bad else None
    if not isinstance(tree, (exp.Select, exp.Union)) or found is not None:
        what = type(found or tree).__name__.upper()
        raise UnsupportedQueryError(f"the query is not a read-only SELECT (it holds {what})", hint=hint)
