"""The level-wise search for minimal functional dependencies (Tane's lattice, Huhtala et al. 1999),
exact or approximate by the g3 error (Kivinen and Mannila 1995). No data access here: a *measure*
function gives, for a batch of candidates ``X -> A``, the rows to delete so the FD holds and the rows
its left-hand side covers; ``dqkit.discover.driver`` and ``dqkit.discover.spark`` are the two.

The search, per right-hand side A: level 0 tests ``{} -> A`` (A constant, or nearly); level l tests
the sets X of l attributes (A not in X) whose every (l-1)-subset was tested and did *not* determine
A. g3 is monotone (a superset of X determines A at most as badly as X), so an X whose immediate
subsets all fail is exactly a candidate for a *minimal* FD, and every superset of an X that holds is
pruned. A key X (no two rows agree on it) determines every attribute, so nothing above it is searched.
One ``measure`` call per level takes every candidate of that level, for every A.

Bounds: ``max_lhs`` (left-hand sides of at most that many attributes) and ``max_candidates`` (the most
candidates one level may hold); a search that stops at a bound while candidates remain says so in
``notes`` and in ``complete``: what it returns is proved, and it never looks complete when it is not.
"""
from __future__ import annotations

import itertools
import re
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

#: a batch of candidates ``(X, A)`` (column indices, X sorted) -> ``(violations, support)`` per candidate
Measure = Callable[[list[tuple[tuple[int, ...], int]]], list[tuple[int, int]]]

#: the most candidates one lattice level may hold before the search stops with a note (a 300-column
#: table has ~90,000 at level 1 and ~13 million at level 2)
MAX_CANDIDATES = 250_000

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_KEYWORDS = {"not", "and", "or"}


def ident(name: str) -> str:
    """A column name as dqkit's rule syntax reads it: plain, or in backticks (doubled inside)."""
    if _PLAIN.fullmatch(name) and name.lower() not in _KEYWORDS and not re.fullmatch(r"t\d+", name):
        return name
    return "`" + name.replace("`", "``") + "`"


@dataclass(frozen=True)
class DiscoveredFD:
    """A minimal FD ``lhs -> rhs`` measured on ``rows`` rows: ``violations`` rows must be deleted for
    it to hold (g3 = violations / rows); ``support`` rows lie in left-hand-side groups of two rows or
    more (the rows that give evidence for it: a nearly unique left-hand side covers few)."""

    lhs: tuple[str, ...]
    rhs: str
    violations: int
    support: int
    rows: int

    kind = "fd"

    @property
    def g3(self) -> float:
        return self.violations / self.rows if self.rows else 0.0

    @property
    def score(self) -> float:
        """The share of rows that support the FD and agree with it: (support - violations) / rows. An
        FD holding only because its left-hand side is nearly unique covers few rows and scores low."""
        return max(self.support - self.violations, 0) / self.rows if self.rows else 0.0

    @property
    def text(self) -> str:
        """The rule in dqkit's syntax: ``a, b -> c``; a constant column (empty left-hand side) as the
        two-tuple DC ``not(t1.c != t2.c)``, which says the same (the FD syntax needs a left side)."""
        if not self.lhs:
            c = ident(self.rhs)
            return f"not(t1.{c} != t2.{c})"
        return ", ".join(ident(c) for c in self.lhs) + " -> " + ident(self.rhs)

    def key(self) -> tuple[frozenset[str], str]:
        return frozenset(self.lhs), self.rhs


@dataclass
class Search:
    """What a search found and how far it went."""

    fds: list[DiscoveredFD] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    complete: bool = True
    levels: int = 0
    candidates: int = 0


def allowed(violations: int, rows: int, error: float) -> bool:
    """g3 = violations / rows is at most ``error`` (exact FDs: no violation at all)."""
    if error <= 0:
        return violations == 0
    return violations <= error * rows + 1e-9 * max(rows, 1)


def _next_level(failed: set[tuple[int, ...]]) -> Iterator[tuple[int, ...]]:
    """Apriori join: the (l+1)-sets whose every l-subset is in ``failed`` (non-empty sorted tuples)."""
    by_prefix: dict[tuple[int, ...], list[int]] = defaultdict(list)
    for x in failed:  # level 0 -> 1 is made by the caller (every other column)
        by_prefix[x[:-1]].append(x[-1])
    for prefix in sorted(by_prefix):
        lasts = sorted(by_prefix[prefix])
        for i, a in enumerate(lasts):
            for b in lasts[i + 1:]:
                cand = prefix + (a, b)
                if all(cand[:j] + cand[j + 1:] in failed for j in range(len(cand) - 2)):
                    yield cand


def _candidates(failed: dict[int, set[tuple[int, ...]]], level: int, k: int) -> Iterator[tuple[tuple[int, ...], int]]:
    """The candidates ``(X, A)`` of the next level, lazily (a bound may stop after the first)."""
    for a, sets in sorted(failed.items()):
        if level == 0:
            yield from (((b,), a) for b in range(k) if b != a)
        else:
            yield from ((x, a) for x in _next_level(sets))


def search_fds(columns: Sequence[str], rows: int, measure: Measure, *, error: float = 0.0,
               max_lhs: int | None = None, max_candidates: int = MAX_CANDIDATES,
               progress: Callable[[int, int], None] | None = None) -> Search:
    """Every minimal non-trivial FD ``X -> A`` over ``columns`` with g3 <= ``error`` and
    ``|X| <= max_lhs`` (None: no bound), measured level by level with ``measure``."""
    k = len(columns)
    out = Search()
    failed: dict[int, set[tuple[int, ...]]] = {}
    cands: list[tuple[tuple[int, ...], int]] = [((), a) for a in range(k)]
    level = 0
    while cands:
        if len(cands) > max_candidates:
            out.complete = False
            out.notes.append(f"the search stopped before level {level}: it holds more than {max_candidates:,} "
                             f"candidate FDs (the bound); FDs with {level} or more attributes on the "
                             f"left were not searched (give --max-lhs or --columns to bound the search)")
            break
        results = measure(cands)
        out.candidates += len(cands)
        out.levels = level + 1
        failed = defaultdict(set)
        for (x, a), (violations, support) in zip(cands, results):
            if allowed(violations, rows, error):
                out.fds.append(DiscoveredFD(tuple(columns[i] for i in x), columns[a], int(violations),
                                            int(support), rows))
            else:
                failed[a].add(x)
        if progress is not None:
            progress(level, len(cands))
        pending = _candidates(failed, level, k)
        level += 1
        if max_lhs is not None and level > max_lhs:
            if next(pending, None) is not None:
                out.complete = False
                out.notes.append(f"FDs with more than {max_lhs} attribute(s) on the left were not searched "
                                 f"(--max-lhs {max_lhs}): candidates with {level} remained")
            break
        cands = list(itertools.islice(pending, max_candidates + 1))
    return out
