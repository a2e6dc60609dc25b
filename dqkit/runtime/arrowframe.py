"""Large Arrow tables built on the driver, handed to Spark without entering the JVM whole.

``spark.createDataFrame(pyarrow.Table)`` serialises every record batch into the JVM's heap at once and
makes one partition per ``maxRecordsPerBatch`` rows (10,000): dedup's 3.2M driver-scored pairs at 100K
entities became 316 partitions, so 316 files when saved, and 75.9M pairs at 1M records needed a 12 GB
heap. In a classic session on a local master the table is written here as one Parquet file (pyarrow,
row groups streamed from the table's batches) in a temporary folder that lives as long as the
process; Spark reads it lazily, with partitions sized by its file-split setting (128 MB) and an
exact size estimate. Elsewhere (Spark Connect, a cluster, whose executors cannot see the driver's
disk) it is sent through Arrow in batches sized to about ``BATCH_BYTES`` each.
"""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

__all__ = ["arrow_frame", "BATCH_BYTES", "ROW_GROUP_ROWS"]

#: bytes of Arrow data per partition when the table is sent through Arrow instead of a file
BATCH_BYTES = 64 * 1024 * 1024
#: rows per Parquet row group (Spark splits a file between tasks at row-group boundaries)
ROW_GROUP_ROWS = 1_000_000


def _local_classic(spark: SparkSession) -> bool:
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        return False
    master = spark.sparkContext.master
    return master == "local" or master.startswith("local[")


def arrow_frame(spark: SparkSession, data: Any, schema: T.StructType) -> DataFrame:
    """``data`` (a ``pyarrow.Table``, or an iterable of ``pyarrow.RecordBatch`` with ``schema``'s columns)
    as a Spark DataFrame read lazily.

    Local classic session: one Parquet file (a row group per batch, at most ``ROW_GROUP_ROWS`` rows) in a
    temporary folder removed when Python exits (not before: a frame derived from this one, or a lazy
    checkpoint of it, may be read at any time while the process lives).
    Otherwise ``createDataFrame`` in ~``BATCH_BYTES`` batches."""
    import pyarrow as pa

    if not _local_classic(spark):
        from dqkit.runtime.sparkutil import scoped_conf

        table = data if isinstance(data, pa.Table) else pa.Table.from_batches(list(data))
        per_row = max(1, table.nbytes // max(1, table.num_rows))
        rows = max(10_000, BATCH_BYTES // per_row)
        with scoped_conf(spark, {"spark.sql.execution.arrow.maxRecordsPerBatch": str(rows)}):
            return spark.createDataFrame(table, schema)
    import pyarrow.parquet as pq

    folder = tempfile.mkdtemp(prefix="dqkit-arrow-")
    atexit.register(shutil.rmtree, folder, True)
    path = os.path.join(folder, "part-0.parquet")
    batches = data.to_batches(max_chunksize=ROW_GROUP_ROWS) if isinstance(data, pa.Table) else data
    writer = None
    try:
        for batch in batches:
            if writer is None:
                writer = pq.ParquetWriter(path, batch.schema, compression="snappy")
            writer.write_batch(batch, row_group_size=ROW_GROUP_ROWS)
        if writer is None:  # no batch at all: an empty file of the schema
            from pyspark.sql.pandas.types import to_arrow_schema

            writer = pq.ParquetWriter(path, to_arrow_schema(schema), compression="snappy")
    finally:
        if writer is not None:
            writer.close()
    return spark.read.schema(schema).parquet(folder)
