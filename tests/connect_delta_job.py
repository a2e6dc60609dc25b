"""Run by test_connect.py in a fresh interpreter: the delta under Spark Connect, JSON on stdout."""
import json
import sys

from pyspark.sql import SparkSession

from dqkit.delta import delta
from dqkit.session import get_spark, is_connect

spark = SparkSession.builder.remote("local[2]").getOrCreate()
assert is_connect(spark) and get_spark() is spark
res = delta(sys.argv[1], sys.argv[2], keys={"users": "id"})
rows = sorted((r.id, r.row_count, r.validation_status) for r in res.row_delta("users").collect())
print(json.dumps({"summary": res.to_dict()["tables"], "row_delta": rows}))
