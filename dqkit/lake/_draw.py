"""A layered layout for the containment graph, so no two table names overlap.

The containment graph is a DAG once duplicates (tables contained in each other) are taken together:
parents go in upper rows and their children below (the rows are the topological generations of the
graph's condensation), ordered within a row by their parents' places so edges cross less. Each node
gets a slot as wide as its label (or its disc, if wider) plus a gap, and a row that would be wider
than the page wraps onto more rows. Positions are in points (1/72 inch), and the figure is made the
size of the layout, so a label drawn at its node's centre never reaches the next label.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping

#: points between two labels in a row, and between rows
GAP_X, GAP_Y = 14.0, 30.0
#: the widest a row may get before it wraps (points; 13 inches)
MAX_WIDTH = 936.0
#: the smallest drawing (points): room for the title
MIN_WIDTH, MIN_HEIGHT = 504.0, 144.0


def label_width(text: str, size: float = 8.0) -> float:
    """The width in points of ``text`` drawn at ``size`` points in matplotlib's default font."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextPath

    return float(TextPath((0, 0), text, size=size, prop=FontProperties()).get_extents().width) if text else 0.0


def layered_layout(g, diameter: Mapping[Hashable, float], width: Callable[[Hashable], float] = lambda n: label_width(str(n)),
                   max_width: float = MAX_WIDTH) -> tuple[dict[Hashable, tuple[float, float]], float, float]:
    """Positions (points) of ``g``'s nodes in layers, and the drawing's width and height (points).

    ``diameter`` is each node's disc diameter in points; ``width(n)`` its label's width in points.
    Node order is deterministic (names break ties)."""
    import networkx as nx

    if not len(g):
        return {}, MIN_WIDTH, MIN_HEIGHT
    cond = nx.condensation(g)
    members = cond.graph["mapping"]  # node -> its strongly connected component
    layer_of = {c: k for k, gen in enumerate(nx.topological_generations(cond)) for c in gen}
    layers: list[list[Hashable]] = [[] for _ in range(max(layer_of.values()) + 1)]
    for n in sorted(g, key=str):
        layers[layer_of[members[n]]].append(n)
    slot = {n: max(width(n), diameter.get(n, 0.0)) + GAP_X for n in g}
    # rows: each layer ordered by the mean place of its parents (barycentre), wrapped at max_width
    rows: list[list[Hashable]] = []
    place: dict[Hashable, float] = {}
    for layer in layers:
        def centre(n: Hashable) -> float:
            ps = [place[p] for p in g.predecessors(n) if p in place]
            return sum(ps) / len(ps) if ps else math.inf
        layer.sort(key=lambda n: (centre(n), str(n)))
        row: list[Hashable] = []
        used = 0.0
        for n in layer:
            if row and used + slot[n] > max_width:
                rows.append(row)
                row, used = [], 0.0
            row.append(n)
            used += slot[n]
        rows.append(row)
        for i, n in enumerate(layer):
            place[n] = float(i)
    width_pt = max(MIN_WIDTH, max(sum(slot[n] for n in r) for r in rows) + 2 * GAP_X)
    heights = [max(max(diameter.get(n, 0.0) for n in r), 12.0) + GAP_Y for r in rows]
    height_pt = max(MIN_HEIGHT, sum(heights) + GAP_Y)
    pos: dict[Hashable, tuple[float, float]] = {}
    top = height_pt - GAP_Y / 2
    for r, h in zip(rows, heights):
        y = top - h / 2
        x = (width_pt - sum(slot[n] for n in r)) / 2  # each row centred
        for n in r:
            pos[n] = (x + slot[n] / 2, y)
            x += slot[n]
        top -= h
    return pos, width_pt, height_pt


def drawn_edges(g) -> list[tuple[Hashable, Hashable]]:
    """The edges worth drawing: the transitive reduction of ``g`` (an edge implied by a path of others
    is left out; containment is transitive, so it adds nothing but clutter), duplicates' mutual edges kept."""
    import networkx as nx

    cond = nx.condensation(g)
    members = cond.graph["mapping"]
    kept = set(nx.transitive_reduction(cond).edges())
    return [(a, b) for a, b in g.edges() if members[a] == members[b] or (members[a], members[b]) in kept]

