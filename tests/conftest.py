"""One SparkSession for the whole test run (local[2], quiet), and small helpers."""
from __future__ import annotations

import tempfile

import pytest



@pytest.fixture(scope="session")
def spark():
    from dqkit.session import get_spark

    warehouse = tempfile.mkdtemp(prefix="dqkit-test-warehouse-")
    session = get_spark(master="local[2]", config={"spark.sql.shuffle.partitions": "4",
                                                   "spark.default.parallelism": "4",
                                                   "spark.sql.warehouse.dir": warehouse})
    yield session
    # Left running until the interpreter exits: stopping it here races with nbval/papermill kernels.
