"""The gates' documented defaults (light: the CLI's --help reads them without numpy)."""
from __future__ import annotations

#: runs a series needs before its metrics are judged (docs/history.md)
MIN_RUNS = 7
#: the false-positive rate the thresholds calibrate to
DEFAULT_FPR = 0.01
