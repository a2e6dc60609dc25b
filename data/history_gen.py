"""The bundled example history (data/history): 21 nights of a profile of an ``orders`` table, with daily
noise, a slow trend and a weekly pattern, and one incident on the last night (NULLs in ``status``).
Deterministic (seeded, fixed run ids and times): ``python data/history_gen.py`` rewrites it."""
from __future__ import annotations

import shutil
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from dqkit.history.store import History, Run

START = date(2026, 11, 1)
NIGHTS = 21


def night_metrics(i: int, rng: np.random.Generator, incident: bool = False) -> dict[str, float]:
    day = START + timedelta(i)
    rows = 10_000 + 40 * i + (1_500 if day.weekday() >= 5 else 0) + rng.normal(0, 60)
    mean = 52.0 + 0.05 * i + rng.normal(0, 0.3)
    null_share = max(0.0, 0.01 + rng.normal(0, 0.001)) + (0.05 if incident else 0.0)
    open_share = 0.30 + rng.normal(0, 0.004)
    return {"rows": round(rows), "duplicate_rows": 0.0, "amount.mean": mean, "amount.p50": mean - 2 + rng.normal(0, 0.3),
            "amount.p95": 3 * mean + rng.normal(0, 1), "status.null_share": null_share,
            "status.nulls": round(null_share * rows), "status.distinct": 4.0,
            "status.top[open]": open_share, "status.top[shipped]": 0.5 + rng.normal(0, 0.004)}


def write(folder: Path) -> None:
    rng = np.random.default_rng(45)
    shutil.rmtree(folder, ignore_errors=True)
    h = History(folder)
    for i in range(NIGHTS):
        day = START + timedelta(i)
        h.append(Run(f"example-{i:02d}", datetime(day.year, day.month, day.day, 23, 30, tzinfo=timezone.utc), day,
                     "profile", "orders", "example", night_metrics(i, rng, incident=i == NIGHTS - 1), "0.1.0"))


if __name__ == "__main__":
    write(Path(__file__).resolve().parent / "history")
