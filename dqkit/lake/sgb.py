"""SGB, the schema graph builder (R2D2 §4.1, Algorithm 1, Theorem 4.1), and its brute-force oracle.

Schemas are visited in non-increasing order of token-set size (the text and Algorithm 1; Figure 3's
"non-decreasing" is an erratum), ties by name so runs are deterministic. Each schema joins EVERY
center containing it, or becomes a center; a center is a member of its own cluster. Edges go from the
superset schema to the subset schema among members of a cluster, once per pair. Identical schema sets
get edges in BOTH directions (req. 7: the content stages decide which way containment holds).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

Edge = tuple[str, str]  # (parent, child): child's schema ⊆ parent's


@dataclass(frozen=True)
class SGBResult:
    """The candidate edges and the work SGB did (req. 9)."""

    edges: frozenset[Edge]
    clusters: tuple[tuple[str, tuple[str, ...]], ...]  # (center, members incl. center)
    subset_checks: int
    n: int

    @property
    def K(self) -> int:
        return len(self.clusters)

    @property
    def cluster_sizes(self) -> list[int]:
        return [len(m) for _, m in self.clusters]

    @property
    def table3_operations(self) -> float:
        """N log N + K(N−K) + Σ C(K_i, 2), Table 3's operation count for SGB (log base 2)."""
        n, k = self.n, self.K
        return (n * math.log2(n) if n > 1 else 0.0) + k * (n - k) + sum(math.comb(s, 2) for s in self.cluster_sizes)

    @property
    def brute_force_operations(self) -> int:
        """C(N, 2): the all-pairs schema comparison SGB replaces."""
        return math.comb(self.n, 2)


def sgb(schemas: Mapping[str, frozenset[str]]) -> SGBResult:
    """Run Algorithm 1 over {table: schema token set}."""
    order = sorted(schemas, key=lambda name: (-len(schemas[name]), name))
    centers: list[str] = []
    members: dict[str, list[str]] = {}
    checks = 0
    for s in order:
        contained = False
        for c in centers:
            checks += 1
            if len(schemas[s]) <= len(schemas[c]) and schemas[s] <= schemas[c]:
                members[c].append(s)
                contained = True
        if not contained:
            centers.append(s)
            members[s] = [s]
    edges: set[Edge] = set()
    for c in centers:
        ms = members[c]
        for i, x in enumerate(ms):
            for y in ms[i + 1:]:
                checks += 1
                if schemas[y] <= schemas[x]:
                    edges.add((x, y))
                if schemas[x] <= schemas[y]:
                    edges.add((y, x))
    return SGBResult(frozenset(edges), tuple((c, tuple(members[c])) for c in centers), checks, len(schemas))


def schema_containment_brute_force(schemas: Mapping[str, frozenset[str]]) -> frozenset[Edge]:
    """Every ordered pair (p, c), p ≠ c, with schema(c) ⊆ schema(p): the all-pairs oracle."""
    return frozenset((p, c) for p in schemas for c in schemas if p != c and schemas[c] <= schemas[p])
