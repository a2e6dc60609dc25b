"""The test session's Spark settings, shared by the ``spark`` fixture and tests/support/jvm_archive.py (whose
archive holds the classes a JVM with these settings loads)."""
from __future__ import annotations

import os
import tempfile


def test_session_config() -> dict[str, str]:
    """Settings of the suite's one in-process session (the reasons are in tests/conftest.py)."""
    parts = os.environ.get("DQKIT_TEST_PARTITIONS", "2")
    config = {"spark.sql.shuffle.partitions": parts, "spark.default.parallelism": parts,
              "spark.sql.adaptive.enabled": os.environ.get("DQKIT_TEST_AQE", "false"),
              "spark.sql.autoBroadcastJoinThreshold": os.environ.get("DQKIT_TEST_BROADCAST", "-1"),
              "spark.sql.warehouse.dir": tempfile.mkdtemp(prefix="dqkit-test-warehouse-")}
    if os.environ.get("DQKIT_TEST_CODEGEN", "false") != "true":
        config.update({"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"})
    return config
