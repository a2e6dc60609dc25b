"""CLP's comparison modes (R2D2 §4.3), named without Spark so the ``lake`` declaration can offer them."""
from __future__ import annotations

#: ``paper``: a sampled row is compared on the search columns only; ``strict``: on all the child's columns
MODES: tuple[str, ...] = ("paper", "strict")
