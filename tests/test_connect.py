"""The same delta under Spark Connect (``remote("local[2]")``) gives the classic results.

Spark Connect cannot start in a process that already runs a classic session, so the Connect run
happens in a fresh interpreter.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dqkit.delta import delta

HERE = Path(__file__).parent


@pytest.mark.connect
def test_delta_under_spark_connect_matches_classic_spark(spark):
    old, new = "data/users/old", "data/users/new"
    env = {k: v for k, v in os.environ.items() if k != "SPARK_REMOTE"}
    proc = subprocess.run([sys.executable, str(HERE / "connect_delta_job.py"), old, new],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    remote = json.loads(proc.stdout.strip().splitlines()[-1])
    classic = delta(old, new, keys={"users": "id"}, spark=spark)
    local = json.loads(json.dumps(classic.to_dict()["tables"]))
    for table in local:
        local[table].pop("seconds"), remote["summary"][table].pop("seconds")
    assert remote["summary"] == local
    rows = sorted((r.id, r.row_count, r.validation_status) for r in classic.row_delta("users").collect())
    assert [tuple(r) for r in remote["row_delta"]] == rows
