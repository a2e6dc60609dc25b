"""A ``dqkit delta`` driver that kills one executor of the test cluster mid-run (run by test_cluster.py).

``python tests/support/kill_driver.py gen N DIR`` writes two versions of a table ``t`` (N rows each, 1.5 % of
them updated, 8 Parquet files per side) into DIR/old and DIR/new and prints the number of updates.

``python tests/support/kill_driver.py run MASTER DATA OUT WORKER_PID[,PID] [--no-kill]`` runs
``dqkit delta DATA/old DATA/new --key t=id --format json --out OUT`` in-process on MASTER while a thread
polls the status tracker: once a stage of the fingerprint job has finished a task and still has
work left, it SIGKILLs one executor JVM whose parent is one of the given workers. Prints the CLI's JSON, then
one line ``{"exit": code, "killed": [pids], "log": [...]}``.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time


def generate(n: int, folder: str) -> int:
    """Two versions of table ``t``; returns how many rows differ (updated in ``a``)."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    ids = np.arange(n)
    old = pd.DataFrame({"id": ids, "a": rng.integers(0, 1000, n), "b": rng.normal(size=n),
                        "s": [f"name{i % 977}" for i in ids]})
    new = old.copy()
    k = n * 15 // 1000
    idx = rng.choice(n, k, replace=False)
    new.loc[idx, "a"] = new.loc[idx, "a"] + 1
    for side, df in (("old", old), ("new", new)):
        os.makedirs(f"{folder}/{side}/t", exist_ok=True)
        for j, part in enumerate(np.array_split(df, 8)):
            part.to_parquet(f"{folder}/{side}/t/part-{j}.parquet", index=False)
    return k


def executors_of(workers: set[int]) -> list[int]:
    """PIDs of executor JVMs whose parent is one of ``workers``, or, when none is (a worker restarted
    since its PID was taken), whose parent is any Worker JVM of this cluster's master."""
    out = subprocess.run(["ps", "-eo", "pid,ppid,args"], capture_output=True, text=True).stdout
    rows = [ln.split(None, 2) for ln in out.splitlines()[1:] if len(ln.split(None, 2)) == 3]
    executors = [(int(pid), int(ppid)) for pid, ppid, args in rows if "CoarseGrainedExecutorBackend" in args]
    own = [pid for pid, ppid in executors if ppid in workers]
    if own:
        return own
    live = {int(pid) for pid, _, args in rows if "deploy.worker.Worker" in args and MASTER in args}
    return [pid for pid, ppid in executors if ppid in live]


MASTER = ""  # the master URL of the run, set in run(); a Worker's command line names it


def run(master: str, data: str, out: str, workers: set[int], kill: bool) -> int:
    global MASTER
    MASTER = master
    from dqkit.cli import main
    from dqkit.runtime.session import get_spark

    spark = get_spark(master=master, config={"spark.sql.shuffle.partitions": "4",
                                             "spark.executor.memory": "768m"})
    sc = spark.sparkContext
    log: list[str] = []
    killed: list[int] = []
    done = threading.Event()
    t0 = time.monotonic()

    def poll() -> None:
        tracker, seen = sc.statusTracker(), {}
        while not done.is_set():
            for sid in tracker.getActiveStageIds():
                info = tracker.getStageInfo(sid)
                if info is None or seen.get(sid) == info.numCompletedTasks:
                    continue
                seen[sid] = info.numCompletedTasks
                log.append(f"{time.monotonic() - t0:6.2f} stage {sid} {info.name[:40]} "
                           f"{info.numCompletedTasks}/{info.numTasks}")
                # a stage of the fingerprint job (the kernel's first action, which also fills its cache)
                # with a task finished and tasks left: the victim's shuffle output and cached blocks exist
                # and are needed again
                if (kill and not killed and info.name.startswith(("count", "first"))
                        and "delta/kernel" in info.name and 1 <= info.numCompletedTasks < info.numTasks):
                    victims = executors_of(workers)[:1]
                    for pid in victims:
                        os.kill(pid, signal.SIGKILL)
                    if not victims and workers:  # no executor JVM found by its parent: kill one worker's whole
                        victim = sorted(workers)[0]  # process group (the worker JVM and the executor it started)
                        os.killpg(victim, signal.SIGKILL)
                        victims = [victim]
                        log.append(f"{time.monotonic() - t0:6.2f} killed worker process group {victim}")
                    killed.extend(victims)
                    log.append(f"{time.monotonic() - t0:6.2f} killed executor {victims}")
            time.sleep(0.02)

    # the executors are up before the delta starts, so a kill hits finished work
    spark.range(0, 4, numPartitions=2).count()
    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        code = main(["delta", f"{data}/old", f"{data}/new", "--key", "t=id", "--format", "json", "--out", out])
    done.set()
    thread.join()
    print(stdout.getvalue().strip())
    print(json.dumps({"exit": code, "killed": killed, "log": log, "seconds": round(time.monotonic() - t0, 1)}))
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        print(generate(int(sys.argv[2]), sys.argv[3]))
    else:
        _, _, master_url, data_dir, out_dir, pids, *rest = sys.argv
        sys.exit(run(master_url, data_dir, out_dir, {int(p) for p in pids.split(",")}, "--no-kill" not in rest))
