"""The runtime: the SparkSession dqkit starts or joins, Spark helpers, progress and cancel, checkpoints, and
atomic writes (``atomic``: temporaries named for their owner, renamed into place, swept when stale).

Below every system; imports nothing of theirs."""
