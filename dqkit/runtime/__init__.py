"""The runtime: the SparkSession dqkit starts or joins, Spark helpers, progress and cancel, checkpoints.

Below every system; imports nothing of theirs."""
