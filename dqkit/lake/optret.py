"""Safe deletion (R2D2 §5): graph pre-processing, the cost model, Opt-Ret (Eq. 3) and Dyn-Lin (Eq. 4).

* ``TransformationProvider``: which edges have a known transformation (§5.1); edges without one are
  dropped. ``LineageProvider`` reads the generator's lineage (an edge is known when one table is an
  ancestor of the other); ``MappingProvider`` takes the user's own list; ``AssumeKnown`` trusts every
  edge and says so in the plan's notes.
* ``CostModel``: C_s, C_m, r, w, r_ℓ, w_ℓ, Th, f_v, A_v. C_e = r·s_p + w·s_q (or w·s_q with
  ``write_only``), L_e = r_ℓ·s_p + w_ℓ·s_q; an edge with L_e ≥ Th is dropped (§5.1). Sizes in GB.
  Defaults: approximate Azure ADLS Gen2 hot-tier (LRS) list prices as used in §6.7 — storage
  $0.019/GB-month, writes $0.065 and reads $0.0052 per 10,000 4-MiB operations (≈ $0.00166 and
  $0.000133 per GB) — one maintenance pass per month (f_v = 1, C_m = r + w) and four accesses per month
  (A_v = 4: one privacy scan a week). Override them for a real lake; ``sample_power_law`` draws A and f
  from a power law for synthetic runs.
* ``opt_ret``: the exact 0/1 ILP of Eq. 3 solved by HiGHS (``scipy.optimize.milp``), split into weakly
  connected components; directed paths go to ``dyn_lin`` (O(N), Theorem 5.1), the rest to the ILP.
  Every solution is checked (req. 29) before it is returned.
"""
from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Protocol

import numpy as np

from dqkit.errors import DqkitError, ParameterError, RuleError

GB = 1e9


class PlanError(DqkitError):
    """A deletion plan that could not be found or failed its checks."""


class CostFileError(RuleError):
    """A cost file that does not parse or holds an unknown or invalid value; the message says where."""


# ------------------------------------------------------------------------------------ cost model
@dataclass(frozen=True)
class CostModel:
    """The §5 cost parameters (money per GB, seconds per GB, per billing period)."""

    storage_cost: float = 0.019        # C_s: per GB per period
    maintenance_cost: float = 0.0018   # C_m: per GB per maintenance operation
    read_cost: float = 0.000133        # r: per GB read
    write_cost: float = 0.00166        # w: per GB written
    read_latency: float = 10.0         # r_ℓ: seconds per GB read
    write_latency: float = 20.0        # w_ℓ: seconds per GB written
    latency_threshold: float = 3600.0  # Th: seconds; edges with L_e ≥ Th are dropped
    maintenance_frequency: float = 1.0  # f_v default
    accesses: float = 4.0              # A_v default
    write_only: bool = False           # C_e ≈ w·s_q
    frequency_by_table: Mapping[str, float] = field(default_factory=dict)
    accesses_by_table: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bool) or isinstance(v, Mapping):
                continue
            if not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise ParameterError(f"cost parameter {f.name} must be a finite number >= 0, not {v!r}")
        for m in (self.frequency_by_table, self.accesses_by_table):
            for k, v in m.items():
                if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v < 0:
                    raise ParameterError(f"cost value for table {k!r} must be a finite number >= 0, not {v!r}")

    def f(self, v: str) -> float:
        return float(self.frequency_by_table.get(v, self.maintenance_frequency))

    def a(self, v: str) -> float:
        return float(self.accesses_by_table.get(v, self.accesses))

    def retention_cost(self, v: str, size_bytes: float) -> float:
        """(C_s + C_m f_v) S_v."""
        return (self.storage_cost + self.maintenance_cost * self.f(v)) * size_bytes / GB

    def reconstruction_cost(self, parent_bytes: float, child_bytes: float) -> float:
        """C_e = r·s_p + w·s_q (w·s_q with ``write_only``)."""
        w = self.write_cost * child_bytes / GB
        return w if self.write_only else self.read_cost * parent_bytes / GB + w

    def latency(self, parent_bytes: float, child_bytes: float) -> float:
        """L_e = r_ℓ·s_p + w_ℓ·s_q (seconds)."""
        return (self.read_latency * parent_bytes + self.write_latency * child_bytes) / GB


def sample_power_law(model: CostModel, tables: Sequence[str], seed: int = 0, exponent: float = 2.0,
                     scale: float = 1.0) -> CostModel:
    """``model`` with A_v and f_v drawn per table from a Pareto (power-law) distribution (§6.7)."""
    rng = np.random.default_rng(seed)
    a = {t: float(round(scale * (1 + rng.pareto(exponent)), 3)) for t in tables}
    f = {t: float(round(scale * (1 + rng.pareto(exponent)), 3)) for t in tables}
    return replace(model, accesses_by_table=a, frequency_by_table=f)


_COST_KEYS = {f.name for f in fields(CostModel)} | {"accesses", "maintenance_frequency"}


def load_costs(path: str | os.PathLike) -> CostModel:
    """A ``CostModel`` from a YAML file; a file that does not parse, or an unknown key or bad value,
    raises ``CostFileError`` naming the file, line and column."""
    from dqkit.io.filecheck import read_text

    text = read_text(path, "the cost file", error=CostFileError,
                     hint="give a YAML file of CostModel fields saved as UTF-8")
    return parse_costs(text, os.fspath(path))


def parse_costs(text: str, source: str = "costs") -> CostModel:
    """See ``load_costs``. Keys: the ``CostModel`` field names; ``accesses`` and
    ``maintenance_frequency`` may be a number or a mapping {table: number, default: number}."""
    import yaml

    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f", line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise CostFileError(f"{source}{where}: {exc.problem}",
                            hint="the cost file is YAML, e.g. `storage_cost: 0.019`") from exc
    if node is None:
        return CostModel()
    if not isinstance(node, yaml.MappingNode):
        raise CostFileError(f"{source}, line {node.start_mark.line + 1}, column {node.start_mark.column + 1}: "
                            "the cost file must be a mapping of parameter: value")
    kwargs: dict[str, Any] = {}
    for knode, vnode in node.value:
        key = knode.value
        at = f"{source}, line {knode.start_mark.line + 1}, column {knode.start_mark.column + 1}"
        if key not in _COST_KEYS or key in ("frequency_by_table", "accesses_by_table"):
            raise CostFileError(f"{at}: unknown cost parameter {key!r}",
                                hint="known: " + ", ".join(sorted(_COST_KEYS - {"frequency_by_table",
                                                                               "accesses_by_table"})))
        value = yaml.safe_load(yaml.serialize(vnode))
        vat = f"{source}, line {vnode.start_mark.line + 1}, column {vnode.start_mark.column + 1}"
        if key in ("accesses", "maintenance_frequency") and isinstance(value, Mapping):
            per = {str(k): v for k, v in value.items() if k != "default"}
            if "default" in value:
                kwargs[key] = value["default"]
            kwargs["accesses_by_table" if key == "accesses" else "frequency_by_table"] = per
            continue
        if key == "write_only":
            if not isinstance(value, bool):
                raise CostFileError(f"{vat}: write_only is true or false, not {value!r}")
        elif not isinstance(value, (int, float)) or isinstance(value, bool):
            raise CostFileError(f"{vat}: {key} must be a number, not {value!r}")
        kwargs[key] = value
    try:
        return CostModel(**kwargs)
    except ParameterError as exc:
        raise CostFileError(f"{source}: {exc.message}") from exc


# ------------------------------------------------------------------------------ transformations
class TransformationProvider(Protocol):
    """Says how ``child`` is rebuilt from ``parent``, or None when nobody knows (§5.1)."""

    def transformation(self, parent: str, child: str) -> str | None: ...


@dataclass(frozen=True)
class MappingProvider:
    """The user's own list: {(parent, child): transformation}."""

    known: Mapping[tuple[str, str], str]

    def transformation(self, parent: str, child: str) -> str | None:
        return self.known.get((parent, child))


@dataclass(frozen=True)
class AssumeKnown:
    """Trust every edge (the plan says so): for exploring a lake before anyone confirmed anything."""

    def transformation(self, parent: str, child: str) -> str | None:
        return "assumed: a filter/projection of the parent (confirm before deleting)"


@dataclass(frozen=True)
class LineageProvider:
    """The generator's lineage manifest: an edge is known when one table is an ancestor of the other
    (the composed transformations, or their inverse filter for an addition)."""

    parents: Mapping[str, str | None]
    ops: Mapping[str, str]

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any]) -> LineageProvider:
        tables = manifest.get("tables", [])
        return cls({t["name"]: t.get("parent") for t in tables}, {t["name"]: t.get("transformation", "") for t in tables})

    def _chain(self, a: str, b: str) -> list[str] | None:
        """Operations from ancestor ``a`` down to ``b``; None when ``a`` is not an ancestor of ``b``."""
        ops, cur, seen = [], b, set()
        while cur is not None and cur not in seen:
            if cur == a:
                return ops[::-1]
            seen.add(cur)
            ops.append(self.ops.get(cur, "?"))
            cur = self.parents.get(cur)
        return None

    def transformation(self, parent: str, child: str) -> str | None:
        down = self._chain(parent, child)
        if down is not None:
            return " -> ".join(down) or "identity"
        up = self._chain(child, parent)
        if up is not None:
            return "inverse of " + " -> ".join(up) + " (filter out what was added)"
        return None


#: the lineage manifest a generated lake folder may carry
LINEAGE = "_lineage.json"


def lineage_provider(lake: Any) -> LineageProvider | None:
    """The lineage manifest (``_lineage.json``) of a lake folder (a path, or a ``Lake`` read from one) as
    a provider, if there is one."""
    from pathlib import Path

    src = getattr(lake, "source", lake)
    if not isinstance(src, (str, os.PathLike)) or os.fspath(src).startswith("catalog:"):
        return None
    f = Path(os.fspath(src)) / LINEAGE
    if not f.is_file():
        return None
    from dqkit.errors import SourceError
    from dqkit.io.filecheck import load_json, require

    hint = f"delete {f} (the lake is then read without lineage) or regenerate the lake"
    doc = load_json(f, "the lineage manifest", error=SourceError, hint=hint)
    tables = doc.get("tables", [])
    require(isinstance(tables, list) and all(isinstance(t, dict) and isinstance(t.get("name"), str) for t in tables),
            SourceError, f, "the lineage manifest", "'tables' is not a list of {name, parent, transformation}", hint)
    return LineageProvider.from_manifest(doc)


# ------------------------------------------------------------------------------------ the plan
@dataclass(frozen=True)
class DeletionPlan:
    """Which tables to retain and delete, the parent that rebuilds each deleted one, and the costs."""

    retain: tuple[str, ...]
    delete: tuple[str, ...]
    rebuild_from: Mapping[str, str]
    storage: float
    maintenance: float
    reconstruction: float
    retain_all: float
    components: tuple[tuple[str, str, int], ...]  # (solver, first node, nodes)
    edges_in: int
    dropped_unknown: tuple[tuple[str, str], ...] = ()
    dropped_latency: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = ()
    seconds: float = 0.0

    @property
    def total(self) -> float:
        return self.storage + self.maintenance + self.reconstruction

    @property
    def savings(self) -> float:
        return self.retain_all - self.total

    def to_dict(self) -> dict[str, Any]:
        return {"retain": list(self.retain), "delete": list(self.delete), "rebuild_from": dict(self.rebuild_from),
                "cost": {"storage": self.storage, "maintenance": self.maintenance,
                         "expected_reconstruction": self.reconstruction, "total": self.total,
                         "retain_everything": self.retain_all, "savings": self.savings},
                "components": [{"solver": s, "first": n, "nodes": k} for s, n, k in self.components],
                "edges_considered": self.edges_in,
                "dropped_unknown_transformation": [list(e) for e in self.dropped_unknown],
                "dropped_latency": [list(e) for e in self.dropped_latency],
                "notes": list(self.notes), "seconds": self.seconds}


def ilp(nodes: Sequence[str], edges: Sequence[tuple[str, str]], node_cost: Mapping[str, float],
        edge_cost: Mapping[tuple[str, str], float]) -> tuple[dict[str, int], dict[tuple[str, str], int], float]:
    """Eq. 3 exactly: min Σ cost_v x_v + Σ A_v C_e y_e s.t. y_(u,v) ≤ x_u; x_v + Σ_u y_(u,v) ≥ 1;
    y_(u,v) ≤ 1 − x_v; x, y binary. Solved by HiGHS through ``scipy.optimize.milp``."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import lil_matrix

    n, m = len(nodes), len(edges)
    idx = {v: i for i, v in enumerate(nodes)}
    c = np.array([node_cost[v] for v in nodes] + [edge_cost[e] for e in edges], dtype=float)
    # costs of small tables are far below the solver's tolerances: solve the problem scaled to O(1)
    scale = float(np.max(np.abs(c))) if len(c) and np.max(np.abs(c)) > 0 else 1.0
    a = lil_matrix((2 * m + n, n + m))
    lb = np.full(2 * m + n, -np.inf)
    ub = np.full(2 * m + n, np.inf)
    for k, (u, v) in enumerate(edges):
        a[k, n + k], a[k, idx[u]] = 1, -1          # y_e − x_u ≤ 0
        ub[k] = 0
        a[m + k, n + k], a[m + k, idx[v]] = 1, 1  # y_e + x_v ≤ 1
        ub[m + k] = 1
    for v in nodes:
        r = 2 * m + idx[v]
        a[r, idx[v]] = 1                          # x_v + Σ y ≥ 1
        lb[r] = 1
    for k, (_, v) in enumerate(edges):
        a[2 * m + idx[v], n + k] = 1
    res = milp(c / scale, constraints=LinearConstraint(a.tocsr(), lb, ub), integrality=np.ones(n + m),
               bounds=Bounds(0, 1), options={"mip_rel_gap": 0.0})
    if res.status != 0 or res.x is None:
        raise PlanError(f"the Opt-Ret ILP has no solution ({res.message})",
                        hint="check the cost parameters; retaining every table is always feasible")
    x = {v: int(round(res.x[idx[v]])) for v in nodes}
    y = {e: int(round(res.x[n + k])) for k, e in enumerate(edges)}
    # one rebuild parent per deleted node (the cheapest chosen): never dearer, and what a plan acts on
    chosen: dict[str, list[tuple[str, str]]] = {}
    for e, on in y.items():
        if on:
            chosen.setdefault(e[1], []).append(e)
    for es in chosen.values():
        for e in sorted(es, key=lambda e: (edge_cost[e], e))[1:]:
            y[e] = 0
    cost = sum(node_cost[v] for v in nodes if x[v]) + sum(edge_cost[e] for e in edges if y[e])
    if cost > res.fun * scale * (1 + 1e-6) + 1e-12:
        raise PlanError(f"the Opt-Ret ILP solution costs {cost!r}, more than the solver's {res.fun * scale!r}")
    return x, y, cost


def dyn_lin(path: Sequence[str], node_cost: Mapping[str, float],
            edge_cost: Mapping[tuple[str, str], float]) -> tuple[dict[str, int], dict[tuple[str, str], int], float]:
    """Eq. 4 on a directed path ``path[0] -> path[1] -> ...`` with ALG[−1] = 0, then backtracking:
    ALG[i] = min(ret_i + ALG[i−1], del_i + ret_{i−1} + ALG[i−2]). O(N); ties keep the table."""
    n = len(path)
    ret = [node_cost[v] for v in path]
    dele = [math.inf] + [edge_cost[(path[i - 1], path[i])] for i in range(1, n)]
    alg = [0.0] * (n + 1)  # alg[i + 1] = ALG[i]; alg[0] = ALG[−1]
    choice = [0] * n
    for i in range(n):
        keep = ret[i] + alg[i]
        drop = dele[i] + ret[i - 1] + alg[i - 1] if i >= 1 else math.inf
        if drop < keep:
            alg[i + 1], choice[i] = drop, 1
        else:
            alg[i + 1], choice[i] = keep, 0
    x = {v: 1 for v in path}
    y = {(path[i - 1], path[i]): 0 for i in range(1, n)}
    i = n - 1
    while i >= 0:
        if choice[i] == 1:
            x[path[i]] = 0
            y[(path[i - 1], path[i])] = 1
            i -= 2  # path[i−1] is retained
        else:
            i -= 1
    return x, y, alg[n]


def _as_path(nodes: Sequence[str], edges: Sequence[tuple[str, str]]) -> list[str] | None:
    """The nodes in order when the component is a directed path (a "line graph" of §5.3), else None."""
    if len(edges) != len(nodes) - 1:
        return None
    nxt: dict[str, str] = {}
    has_parent: set[str] = set()
    for u, v in edges:
        if u in nxt or v in has_parent:
            return None
        nxt[u] = v
        has_parent.add(v)
    roots = [v for v in nodes if v not in has_parent]
    if len(roots) != 1:
        return None
    out = [roots[0]]
    while out[-1] in nxt:
        out.append(nxt[out[-1]])
    return out if len(out) == len(nodes) else None


def check_solution(nodes: Sequence[str], edges: Sequence[tuple[str, str]], x: Mapping[str, int],
                   y: Mapping[tuple[str, str], int], node_cost: Mapping[str, float],
                   edge_cost: Mapping[tuple[str, str], float], objective: float) -> None:
    """Req. 29: every deleted node rebuilds from a retained parent (exactly one at the optimum when every
    A_v·C_e > 0); parentless nodes are retained; y only on deleted nodes; the objective is recomputed."""
    parents: dict[str, list[tuple[str, str]]] = {v: [] for v in nodes}
    for e in edges:
        parents[e[1]].append(e)
    for v in nodes:
        chosen = [e for e in parents[v] if y[e]]
        if not parents[v] and not x[v]:
            raise PlanError(f"the plan deletes {v!r}, which has no parent")
        if x[v] and chosen:
            raise PlanError(f"the plan rebuilds {v!r} although it is retained")
        if not x[v]:
            if not chosen:
                raise PlanError(f"the plan deletes {v!r} without a parent to rebuild it from")
            for u, _ in chosen:
                if not x[u]:
                    raise PlanError(f"the plan rebuilds {v!r} from {u!r}, which it deletes")
            if len(chosen) > 1 and all(edge_cost[e] > 0 for e in parents[v]):
                raise PlanError(f"the plan pays for {len(chosen)} rebuild parents of {v!r}: not optimal")
    cost = sum(node_cost[v] for v in nodes if x[v]) + sum(edge_cost[e] for e in edges if y[e])
    if not math.isclose(cost, objective, rel_tol=1e-6, abs_tol=1e-9):
        raise PlanError(f"the plan's objective {objective!r} differs from its recomputed cost {cost!r}")


def opt_ret(sizes: Mapping[str, float], edges: Iterable[tuple[str, str]], costs: CostModel | None = None,
            provider: TransformationProvider | None = None, use_dyn_lin: bool = True) -> DeletionPlan:
    """The deletion plan for the containment graph (edges parent -> child) over tables of ``sizes`` bytes.

    Pre-processing (§5.1): edges without a known transformation, or with L_e ≥ Th, are dropped. Then
    per weakly connected component: Dyn-Lin for directed paths, the ILP otherwise (req. 31); every
    component's solution is checked (req. 29). A graph without edges gives the empty plan (retain all).
    """
    import time

    import networkx as nx

    t0 = time.perf_counter()
    costs = costs or CostModel()
    provider = provider or AssumeKnown()
    notes: list[str] = []
    if isinstance(provider, AssumeKnown):
        notes.append("no transformation knowledge was given: every edge was assumed rebuildable; "
                     "confirm each deleted table's transformation before deleting")
    unknown, slow, kept = [], [], []
    for u, v in sorted(set(edges)):
        if u not in sizes or v not in sizes:
            raise PlanError(f"the edge {u} -> {v} names a table without a size")
        if provider.transformation(u, v) is None:
            unknown.append((u, v))
        elif costs.latency(sizes[u], sizes[v]) >= costs.latency_threshold:
            slow.append((u, v))
        else:
            kept.append((u, v))
    node_cost = {v: costs.retention_cost(v, s) for v, s in sizes.items()}
    edge_cost = {(u, v): costs.a(v) * costs.reconstruction_cost(sizes[u], sizes[v]) for u, v in kept}
    g = nx.DiGraph()
    g.add_nodes_from(sorted(sizes))
    g.add_edges_from(kept)
    x: dict[str, int] = {}
    rebuild: dict[str, str] = {}
    comps = []
    for comp in sorted((sorted(c) for c in nx.weakly_connected_components(g)), key=lambda c: c[0]):
        ce = sorted(e for e in kept if e[0] in comp and e[1] in comp) if len(comp) > 1 else []
        if not ce:
            x[comp[0]] = 1
            continue
        path = _as_path(comp, ce) if use_dyn_lin else None
        if path is not None:
            cx, cy, obj = dyn_lin(path, node_cost, edge_cost)
            comps.append(("dyn-lin", path[0], len(comp)))
        else:
            cx, cy, obj = ilp(comp, ce, node_cost, edge_cost)
            comps.append(("ilp", comp[0], len(comp)))
        check_solution(comp, ce, cx, cy, node_cost, edge_cost, obj)
        x.update(cx)
        for (u, v), on in sorted(cy.items()):
            if on and v not in rebuild:
                rebuild[v] = u
    retain = tuple(v for v in sorted(sizes) if x[v])
    delete = tuple(v for v in sorted(sizes) if not x[v])
    storage = sum(costs.storage_cost * sizes[v] / GB for v in retain)
    maint = sum(costs.maintenance_cost * costs.f(v) * sizes[v] / GB for v in retain)
    recon = sum(edge_cost[(rebuild[v], v)] for v in delete)
    if not kept:
        notes.append("no edge is left to act on: nothing can be deleted safely, every table is retained")
    return DeletionPlan(retain, delete, rebuild, storage, maint, recon, sum(node_cost.values()), tuple(comps),
                        len(kept) + len(unknown) + len(slow), tuple(unknown), tuple(slow), tuple(notes),
                        time.perf_counter() - t0)


def costs_from(value: CostModel | Mapping[str, Any] | str | os.PathLike | None) -> CostModel:
    """A ``CostModel`` from a model, a dict of parameters, or a YAML file path."""
    if value is None:
        return CostModel()
    if isinstance(value, CostModel):
        return value
    if isinstance(value, Mapping):
        import yaml

        return parse_costs(yaml.safe_dump(dict(value)), "costs")
    return load_costs(value)

