"""Names delta's outputs and statistics use, shared by its modules."""
from __future__ import annotations

STAGES: tuple[str, ...] = ("dedup", "row", "column")
ROW_COUNT = "row_count"
STATUS = "validation_status"
INSERT, DELETE = "INSERT", "DELETE"
NULL_CHANGES = "null_changes"
RESERVED = (ROW_COUNT, STATUS)
ROW_STAT_NAMES = ("rows_old", "rows_new", "rows_abs_diff", "dedup_rows_old", "dedup_rows_new",
                  "dedup_abs_diff", "differences", "percent")
COLUMN_STAT_NAMES = ("count", "max", "min", "q1", "median", "q3")
_C_OLD, _C_NEW = "_dq_c_old", "_dq_c_new"
_STATS = "_dq_row_stats"
