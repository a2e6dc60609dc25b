"""Seeded tables with planted functional dependencies and BART-style errors, for rule discovery.

Columns: ``tid`` (a key), then per planted FD ``i`` a left column ``a{i}`` (``lhs_values`` values,
uniform) and a right column ``b{i}`` = f_i(a{i}) (f_i a random map onto ``rhs_values`` values, so
``b{i} -> a{i}`` does not hold), then ``noise`` columns ``n{j}`` of ``noise_values`` uniform values. In
the clean table the planted ``a{i} -> b{i}`` are the minimal FDs of one attribute (with high
probability), besides FDs whose left-hand side is nearly unique (several columns together), which
hold by accident and cover few rows: the ranking of ``dqkit discover`` discounts those.

Errors, as BART's active-domain errors: ``error_rate`` of the rows, chosen at random, each get one
wrong value in one random non-key column, copied from another row of the same column (a value that
differs from the clean one). ``errors`` lists (tid, column, clean, dirty).

    python data/planted.py --rows 2000 --fds 3 --out /tmp/planted    # dirty.csv, clean.csv, truth.yaml
"""
from __future__ import annotations

import argparse
import os
from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Planted:
    dirty: pd.DataFrame
    clean: pd.DataFrame
    fds: tuple[tuple[str, str], ...]
    errors: pd.DataFrame

    @property
    def truth_rules(self) -> list[str]:
        """The planted FDs in dqkit's rule syntax."""
        return [f"{a} -> {b}" for a, b in self.fds]

    def truth_yaml(self) -> str:
        return "rules:\n" + "".join(f"  - name: planted{i + 1}\n    rule: \"{r}\"\n"
                                    for i, r in enumerate(self.truth_rules))


def planted_table(rows: int = 2000, fds: int = 3, noise: int = 2, error_rate: float = 0.05, *,
                  lhs_values: int = 40, rhs_values: int = 8, noise_values: int = 30, seed: int = 0) -> Planted:
    """A clean table with ``fds`` planted FDs and its dirty copy with BART-style errors."""
    rng = np.random.default_rng(seed)
    data: dict[str, np.ndarray] = {"tid": np.arange(rows)}
    planted = []
    for i in range(fds):
        a = rng.integers(0, lhs_values, rows)
        f = rng.integers(0, rhs_values, lhs_values)
        data[f"a{i}"] = np.array([f"a{i}_{v}" for v in a], dtype=object)
        data[f"b{i}"] = np.array([f"b{i}_{v}" for v in f[a]], dtype=object)
        planted.append((f"a{i}", f"b{i}"))
    for j in range(noise):
        data[f"n{j}"] = rng.integers(0, noise_values, rows)
    clean = pd.DataFrame(data)
    dirty = clean.copy()
    columns = [c for c in clean.columns if c != "tid"]
    hit = rng.choice(rows, size=int(round(error_rate * rows)), replace=False)
    errors = []
    for r in sorted(hit):
        col = columns[int(rng.integers(0, len(columns)))]
        values = clean[col].to_numpy()
        choices = np.flatnonzero(values != values[r])
        if not len(choices):
            continue
        wrong = values[int(rng.choice(choices))]
        dirty.at[r, col] = wrong
        errors.append((int(r), col, values[r], wrong))
    return Planted(dirty, clean, tuple(planted), pd.DataFrame(errors, columns=["tid", "column", "clean", "dirty"]))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=2000)
    p.add_argument("--fds", type=int, default=3)
    p.add_argument("--noise", type=int, default=2)
    p.add_argument("--error-rate", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)
    t = planted_table(a.rows, a.fds, a.noise, a.error_rate, seed=a.seed)
    os.makedirs(a.out, exist_ok=True)
    t.dirty.to_csv(os.path.join(a.out, "dirty.csv"), index=False)
    t.clean.to_csv(os.path.join(a.out, "clean.csv"), index=False)
    with open(os.path.join(a.out, "truth.yaml"), "w", encoding="utf-8") as fh:
        fh.write(t.truth_yaml())


if __name__ == "__main__":
    main()
