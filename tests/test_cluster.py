"""The same answers locally, on a standalone cluster and over Spark Connect; faults survived or refused.

Every test here uses the session's ``cluster`` fixture (a master and two 1-core workers started from the
installed pyspark, Connect servers on demand). They live in one file so that ``--dist loadfile`` starts
one cluster per run. ``-m "not cluster"`` leaves them out.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support import matrix_runner
from support.cluster import base_env

pytestmark = pytest.mark.cluster
HERE = Path(__file__).parent
SUPPORT = HERE / "support"
TIMINGS = Path(os.environ.get("TMPDIR", "/tmp")) / "dqkit-cluster-matrix.json"


#: commands a backend does not run in the matrix. The delta runs once per backend: locally and on the cluster
#: through the CLI, over Connect inside the report's notebook kernel, which runs the same registry ``run`` on
#: the command's backend and saves the same summary and row delta (the CLI's delta path is backend-free).
#: One report suffices: its kernel inherits the backend as every report's does (``--master`` through the same
#: ``use_backend`` variables: tests/test_cluster_errors.py), and on the cluster it would be a second application
#: start (two executors launched again, ~100 s at the suite's load). The local report is tests/test_report.py's.
SKIP = {"local": ["report delta"], "standalone": ["report delta"], "connect": ["delta"]}


def _runners(inputs: Path, tmp: Path, backends: dict[str, list[str]], timeout: float = 900) -> dict[str, dict]:
    """All commands (but the backend's ``SKIP``) in one fresh interpreter per backend; the runners' JSON
    documents by backend.

    The backends run at the same time (the small jobs are latency-bound; the local run and the Connect
    server do not use the workers) unless ``DQKIT_MATRIX_SEQUENTIAL=1`` (to measure the overhead). The
    local backend (no flags) runs in this process, on the test session's warm JVM: one interpreter and
    one JVM start fewer, the same CLI path (``dqkit.cli.main``); ``DQKIT_MATRIX_LOCAL_PROCESS=1`` gives it
    its own process as the others (a cold start, to compare per-command times across backends)."""
    sequential = os.environ.get("DQKIT_MATRIX_SEQUENTIAL") == "1"
    own_process = os.environ.get("DQKIT_MATRIX_LOCAL_PROCESS") == "1"
    procs, outputs = {}, {}

    def in_process(name: str, backend: list[str]) -> None:
        t = time.perf_counter()
        outputs[name] = {"results": matrix_runner.run(inputs, tmp / name, backend, skip=SKIP.get(name)),
                         "seconds": round(time.perf_counter() - t, 2)}

    for name, backend in backends.items():
        if not backend and not own_process:
            continue  # the local run: in this process, once the others are started
        skip = ["--skip", ",".join(SKIP[name])] if SKIP.get(name) else []
        procs[name] = subprocess.Popen([sys.executable, str(SUPPORT / "matrix_runner.py"), str(inputs), str(tmp / name),
                                        *backend, *skip], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                       env=base_env())
        if sequential:
            outputs[name] = procs[name].communicate(timeout=timeout)
    for name, backend in backends.items():
        if not backend and not own_process:
            in_process(name, backend)
    for name, proc in procs.items():
        out, err = outputs.get(name) or proc.communicate(timeout=timeout)
        assert proc.returncode == 0, f"{name}: {err[-3000:]}"
        outputs[name] = json.loads(out.strip().splitlines()[-1])
    return {name: outputs[name] for name in backends}


def test_every_command_gives_the_local_answer_on_a_standalone_cluster_and_over_spark_connect(cluster, tmp_path,
                                                                                            spark, monkeypatch):
    for name in ("SPARK_REMOTE", "DQKIT_SPARK_MASTER", "DQKIT_CHECKPOINT_DIR"):  # the in-process local run
        monkeypatch.delenv(name, raising=False)
    inputs = tmp_path / "in"
    matrix_runner.prepare(inputs)
    remote = cluster.connect()
    t0 = time.perf_counter()
    runs = _runners(inputs, tmp_path, {"local": [], "standalone": ["--master", cluster.master_url],
                                       "connect": ["--remote", remote]})
    wall = time.perf_counter() - t0
    expected_master = {"connect": "Spark Connect"}
    local = runs["local"]["results"]
    everything = set(matrix_runner.commands(inputs, tmp_path))
    for backend, run in runs.items():
        assert set(run["results"]) == everything - set(SKIP.get(backend, ())), backend
    # the reference for a report: the local CLI delta's saved summary (the report saves the same document)
    reference = {**local, "report delta": {"exit": 0, "json": {"summary": json.loads(
        (tmp_path / "local" / "delta" / "summary.json").read_text())}}}
    problems = []
    for backend, run in runs.items():
        for command, got in run["results"].items():
            want = reference[command]
            if got["exit"] != want["exit"] or got["json"] is None:
                problems.append(f"{backend} {command}: exit {got['exit']} (local {want['exit']}): {got['err'][-400:]}")
                continue
            if command == "report delta" and backend != "local":  # its notebook ran on the command's backend
                assert got["json"].pop("spark_master") == expected_master[backend], (backend, command)
            diff = matrix_runner.differences(matrix_runner.comparable(want["json"], str(tmp_path / "local")),
                                             matrix_runner.comparable(got["json"], str(tmp_path / backend)))
            if diff:
                problems.append(f"{backend} {command}: {diff}")
    timings = {"wall_seconds": round(wall, 1), "load_average": os.getloadavg(),
               "sequential": os.environ.get("DQKIT_MATRIX_SEQUENTIAL") == "1",
               "per_backend": {b: r["seconds"] for b, r in runs.items()},
               "per_command": {c: {b: r["results"][c]["seconds"] for b, r in runs.items() if c in r["results"]}
                               for c in everything}}
    TIMINGS.write_text(json.dumps(timings, indent=1))
    print(json.dumps(timings))
    assert not problems, "\n".join(problems)
    assert local["delta"]["exit"] == 1 and local["repair"]["exit"] == 0 and local["query"]["exit"] == 1  # query: candidates found
    # on the cluster, repair checkpointed reliably beside its --out; locally and over Connect (no server
    # folder) it took local checkpoints; no run left a checkpoint folder behind
    made = runs["standalone"]["results"]["repair"]["checkpoints"]
    assert len(made) == 1 and Path(made[0]).name.startswith(".repair.ckpt+"), made
    assert runs["local"]["results"]["repair"]["checkpoints"] == runs["connect"]["results"]["repair"]["checkpoints"] == []
    for backend in runs:
        assert [p.name for p in (tmp_path / backend).iterdir() if ".ckpt+" in p.name] == [], backend
    # the delta's saved row delta (written by the executors, or by the Connect server) holds the local rows
    saved = {"local": "delta", "standalone": "delta", "connect": "report_saved"}
    row_delta = {b: sorted((tuple(r) for r in spark.read.parquet(str(tmp_path / b / saved[b] / "users_row_delta"))
                            .collect()), key=repr) for b in runs}
    assert row_delta["local"] and row_delta["standalone"] == row_delta["connect"] == row_delta["local"]


# ------------------------------------------------------------------------------------------ faults
ROWS = 250_000  # about 25 s of delta on the two 1-core workers: long enough to lose an executor mid-run


@pytest.fixture(scope="module")
def big_delta(tmp_path_factory) -> tuple[Path, int]:
    """Two versions of a ``ROWS``-row table (1.5 % updated) and the number of updated rows."""
    folder = tmp_path_factory.mktemp("big")
    proc = subprocess.run([sys.executable, str(SUPPORT / "kill_driver.py"), "gen", str(ROWS), str(folder)],
                          capture_output=True, text=True, timeout=300, env=base_env())
    assert proc.returncode == 0, proc.stderr[-2000:]
    return folder, int(proc.stdout.split()[-1])


def _leftovers(folder: Path, name: str) -> list[str]:
    """Hidden temporary siblings of output ``name`` (``.NAME.tmp-*``, ``.NAME.old-*``)."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(f".{name}."))


def test_a_killed_executor_does_not_change_the_delta_and_leaves_no_partial_output(cluster, big_delta, tmp_path):
    data, updated = big_delta
    cluster.wait_idle()
    cluster.wait_workers(2)
    workers = ",".join(str(p.pid) for n, p in cluster.procs.items() if n.startswith("worker"))
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, str(SUPPORT / "kill_driver.py"), "run", cluster.master_url, str(data),
                           str(out), workers], capture_output=True, text=True, timeout=600, env=base_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    *document, last = proc.stdout.strip().splitlines()
    run = json.loads(last)
    assert run["killed"], f"no executor was killed: {run['log']}"
    assert run["exit"] == 1, proc.stderr[-2000:]
    t = json.loads("\n".join(document))["tables"]["t"]
    # the local answer, known from how the versions were generated: every updated row is one delete and
    # one insert, paired by key
    assert t["row_stats"] == {"rows_old": ROWS, "rows_new": ROWS, "rows_abs_diff": 0, "dedup_rows_old": ROWS,
                              "dedup_rows_new": ROWS, "dedup_abs_diff": 0, "differences": 2 * updated,
                              "percent": round(100 * updated / ROWS, 1)}, run["log"]
    assert t["pairing"] == {"paired": updated, "deletes": updated, "inserts": updated, "ambiguous_key_rows": 0,
                            "unpaired_deletes": 0, "unpaired_inserts": 0}, run["log"]
    assert {c: s["count"] for c, s in t["column_stats"].items()} == {"a": updated, "b": 0, "s": 0, "row_count": 0}
    saved = json.loads((out / "summary.json").read_text())
    assert saved["tables"]["t"]["row_stats"] == t["row_stats"]
    assert _leftovers(tmp_path, "out") == []
    print(f"killed-executor delta: {run['seconds']} s; {run['log'][-1]}")


def test_a_terminated_cli_leaves_no_output_and_no_temporary_folder(cluster, big_delta, tmp_path):
    data, _ = big_delta
    cluster.wait_idle()
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "dqkit.cli", "--master", cluster.master_url, "delta",
                             str(data / "old"), str(data / "new"), "--key", "t=id", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=base_env())
    seen = None
    end = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < end and not seen:
        seen = _leftovers(tmp_path, "out")  # the atomic write has started
        time.sleep(0.02)
    assert seen, "the delta finished before its output was being written"
    proc.send_signal(15)  # SIGTERM, as a shell's kill or a scheduler's timeout sends it
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, err[-2000:]
    assert "cancelled" in err
    assert not out.exists() and _leftovers(tmp_path, "out") == []


def _cli(backend: list[str], argv: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dqkit.cli", *backend, *argv], capture_output=True, text=True,
                          timeout=timeout, env=base_env())


def test_a_connect_server_without_dqkit_is_named_with_what_to_install_where(cluster):
    remote = cluster.connect("connect-without-dqkit", with_dqkit=False)
    data = HERE.parent / "data"
    proc = _cli(["--remote", remote], ["detect", str(data / "bigdansing_table1.csv"), "--rules",
                                       str(data / "bigdansing_table1_rules.yaml"), "--key", "tid"])
    cluster.stop_process("connect-without-dqkit")
    assert proc.returncode == 2, proc.stderr[-2000:]
    first = proc.stderr.splitlines()[0]
    assert "Python workers cannot import dqkit" in first, proc.stderr
    assert "PYSPARK_PYTHON" in proc.stderr and "Traceback" not in proc.stderr


def test_a_connect_server_that_goes_away_mid_run_gives_exit_2_and_a_sentence(cluster, big_delta):
    data, _ = big_delta
    remote = cluster.connect("connect-that-stops")
    proc = subprocess.Popen([sys.executable, "-m", "dqkit.cli", "--remote", remote, "delta", str(data / "old"),
                             str(data / "new"), "--key", "t=id"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=base_env())
    time.sleep(8)  # the client connected and the delta runs
    assert proc.poll() is None, proc.communicate()[1][-2000:]
    t = time.monotonic()
    cluster.stop_process("connect-that-stops", grace=0)
    _, err = proc.communicate(timeout=300)
    print(f"server gone: the CLI ended {time.monotonic() - t:.1f} s after the server was killed")
    assert proc.returncode in (2, 3), err[-2000:]
    assert err.splitlines()[0].startswith("dqkit: error: the Spark Connect server stopped answering"), err
    assert "Traceback" not in err and "grpc" not in err.splitlines()[0].lower()
