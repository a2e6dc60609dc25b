"""``make demo``: the main job on the bundled sample data.

Compares the two bundled versions of the Diftong paper's Users database, prints the row and column
statistics, and writes the JSON summary, the charts and the validation tables to ``reports/``.
"""
from __future__ import annotations

import sys
from pathlib import Path

from dqkit.delta import delta
from dqkit.session import get_spark

DATA = Path(__file__).resolve().parent.parent / "data"


def bundled(name: str) -> Path:
    """Path of a bundled sample dataset (source checkout or installed package)."""
    here = DATA / name
    if here.exists():
        return here
    from importlib import resources

    return Path(str(resources.files("dqkit.data") / name))


def main(out: str = "reports") -> int:
    """Run the demo delta and write its outputs; returns 0."""
    get_spark()
    users = bundled("users")
    result = delta(users / "old", users / "new", keys={"users": ["id"]})
    print(result.to_text())
    where = result.save(Path(out) / "delta_users")
    print(f"\nJSON, charts and delta tables written to {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
