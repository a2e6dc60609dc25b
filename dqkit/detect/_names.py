"""Names detection shows to people, in a Spark-free module (the declaration and the widgets read them)."""
from __future__ import annotations

#: the columns of a candidate-fix sample (``DetectionResult.first_fixes``)
FIX_SAMPLE_COLUMNS = ["rule", "t1", "t2", "cell", "value", "fix", "other value"]
