"""The repair methods (BigDansing §5), named without Spark so the ``repair`` declaration can offer them."""
from __future__ import annotations

#: ``auto``: each rule by the method that fits it; ``equivalence-class``; ``holistic``
METHODS: tuple[str, ...] = ("auto", "equivalence-class", "holistic")
