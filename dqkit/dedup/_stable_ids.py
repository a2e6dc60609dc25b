"""Stable cluster ids across nights (``dedup --since``), on the driver over the changed part only.

Plain Python (no Spark): given the previous night's ids of the records involved and tonight's
components of the same records, decide tonight's ids:

* an old id passes to at most one new cluster and a new cluster takes at most one old id. The pairs
  (new cluster, old cluster) sharing records are taken in order of the records they share (most first;
  ties to the smallest old id, then to the new cluster with the smallest key); a pair is taken when
  neither its new cluster has an id yet nor its old id was passed on. So an unchanged cluster keeps its
  id, a changed one keeps its own, a merged one keeps the id of its largest ancestor (the old cluster
  giving it the most records; ties to the smallest id), and a split cluster's id goes to the part
  holding most of its records (ties to the part with the smallest key);
* a cluster left without an old id (all new records, or the other part of a split) gets a new id
  that is no id of the previous night, current or retired: its smallest key when that is free, else
  the next free one among its keys, else (text keys) ``<smallest key>~<n>`` with the smallest free
  ``n``, or (integer keys) one more than the largest id seen;
* the old ids not passed on are retired: the saved run carries them, so they are never reused.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any

__all__ = ["stable_ids"]


def stable_ids(old: Mapping[Hashable, Any], new: Mapping[Hashable, Hashable],
               taken: Callable[[set[Any]], set[Any]], *, integer: bool = False,
               largest_id: Callable[[], Any] | None = None) -> tuple[dict[Hashable, Any], list[Any]]:
    """``(record -> id, retired ids)`` for the records of ``new`` (``record -> component label``),
    given ``old`` (``record -> previous id`` of the records the previous night had, deleted ones
    included). ``taken(ids)`` says which of ``ids`` the previous night used (current or retired);
    ``largest_id()`` the largest such id (integer keys only). See the module docstring for the rule."""
    members: dict[Hashable, list[Hashable]] = {}
    for r, c in new.items():
        members.setdefault(c, []).append(r)
    first = {c: min(rs) for c, rs in members.items()}  # type: ignore[type-var]
    shared: dict[tuple[Hashable, Any], int] = {}
    for r, c in new.items():
        if r in old:
            shared[(c, old[r])] = shared.get((c, old[r]), 0) + 1
    given: dict[Hashable, Any] = {}
    passed: set[Any] = set()
    for (c, o), _n in sorted(shared.items(), key=lambda kv: (-kv[1], kv[0][1], first[kv[0][0]])):
        if c not in given and o not in passed:
            given[c], _ = o, passed.add(o)
    fresh = sorted((c for c in members if c not in given), key=lambda c: first[c])  # type: ignore[arg-type]
    if fresh:
        keys = {k for c in fresh for k in members[c]}
        blocked = set(taken(keys)) | set(old.values())
        used = set(given.values())
        top: Any = None
        for c in fresh:
            free = [k for k in sorted(members[c]) if k not in blocked and k not in used]  # type: ignore[type-var]
            if free:
                given[c] = free[0]
            elif integer:
                if top is None:
                    top = max([v for v in (largest_id() if largest_id else None, *blocked, *used, *keys)
                               if v is not None])
                top += 1
                given[c] = top
            else:
                given[c] = _suffixed(str(first[c]), taken, blocked | used)
            used.add(given[c])
    retired = sorted(set(old.values()) - passed, key=lambda v: (str(type(v)), v))
    return {r: given[c] for r, c in new.items()}, retired


def _suffixed(base: str, taken: Callable[[set[Any]], set[Any]], used: set[Any]) -> str:
    """``base~n`` with the smallest ``n >= 1`` neither the previous night nor this one used."""
    n = 1
    while True:
        batch = {f"{base}~{i}" for i in range(n, n + 16)}
        busy = set(taken(batch)) | (batch & used)
        for i in range(n, n + 16):
            if f"{base}~{i}" not in busy:
                return f"{base}~{i}"
        n += 16
