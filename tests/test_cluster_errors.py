"""Deployment failures as sentences, and the CLI's backend flags, without Spark (the cluster tests in
test_cluster.py reproduce them on real servers)."""
from __future__ import annotations

import os

from dqkit.errors import ClusterError, cluster_error, describe_error
from dqkit.runtime.session import use_backend


class _InactiveRpcError(Exception):
    """Stands in for grpc's error class (matched by name, as grpc is optional for classic Spark)."""


def test_a_worker_without_dqkit_and_a_vanished_connect_server_become_cluster_errors():
    missing = RuntimeError("PythonException: ModuleNotFoundError: No module named 'dqkit'")
    assert isinstance(cluster_error(missing), ClusterError)
    assert "Python workers cannot import dqkit" in describe_error(missing)
    gone = _InactiveRpcError("<_InactiveRpcError of RPC: status = StatusCode.UNAVAILABLE, "
                             "details = \"failed to connect to all addresses\">")
    assert describe_error(gone).startswith("the Spark Connect server stopped answering")
    wrapped = ValueError("cannot read t")
    wrapped.__cause__ = gone
    assert isinstance(cluster_error(wrapped), ClusterError)
    assert cluster_error(ValueError("StatusCode.UNAVAILABLE in a user's column value")) is None
    assert cluster_error(RuntimeError("ModuleNotFoundError: No module named 'rapidfuzz'")) is None


def test_the_backend_flags_go_to_the_environment_that_a_report_kernel_inherits(monkeypatch):
    for name in ("SPARK_REMOTE", "DQKIT_SPARK_MASTER", "SPARK_CONNECT_MODE_ENABLED"):
        monkeypatch.delenv(name, raising=False)
    use_backend(remote="sc://h:15002")
    assert os.environ["SPARK_REMOTE"] == "sc://h:15002" and "DQKIT_SPARK_MASTER" not in os.environ
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")
    use_backend(master="spark://h:7077")
    assert os.environ["DQKIT_SPARK_MASTER"] == "spark://h:7077"
    assert "SPARK_REMOTE" not in os.environ and "SPARK_CONNECT_MODE_ENABLED" not in os.environ


def test_a_command_that_needs_no_spark_starts_no_session_on_the_given_master(monkeypatch, capsys, spark_calls,
                                                                              wall_clock):
    from dqkit.cli import main

    for name in ("SPARK_REMOTE", "DQKIT_SPARK_MASTER"):
        monkeypatch.delenv(name, raising=False)
    # nothing listens there: a session started eagerly would fail or hang
    with wall_clock.within(30, "report --list-parameters"):
        assert main(["--master", "spark://127.0.0.1:9", "report", "delta", "--list-parameters"]) == 0
    assert spark_calls == [] and "old = " in capsys.readouterr().out
    assert os.environ["DQKIT_SPARK_MASTER"] == "spark://127.0.0.1:9"


def test_the_matrix_compares_a_remote_reports_saved_summary_with_the_local_delta_and_flags_any_change(tmp_path):
    # the cluster matrix (test_cluster.py) checks a report over Connect against the local delta command's
    # saved summary: broken on purpose here, without a cluster, it must name the changed count, a report that
    # saved nothing, and nothing when the two agree (timings are left out)
    import json

    from support import matrix_runner

    summary = {"tables": {"users": {"rows_old": 6, "rows_new": 7, "updated": 2, "seconds": 1.5}}}
    local = tmp_path / "local" / "delta"
    remote = tmp_path / "connect"
    (remote / "report_saved").mkdir(parents=True)
    (remote / "report").mkdir()
    local.mkdir(parents=True)
    (local / "summary.json").write_text(json.dumps(summary))
    (remote / "report" / "delta_report.html").write_text("<tr><th>Spark master</th><td>Spark Connect</td></tr>")
    reference = {"summary": json.loads((local / "summary.json").read_text())}

    def compared(saved: dict | None) -> list[str]:
        target = remote / "report_saved" / "summary.json"
        if saved is None:
            target.unlink(missing_ok=True)
        else:
            target.write_text(json.dumps(saved))
        got = matrix_runner._report_json(remote)
        assert got.pop("spark_master") == "Spark Connect"
        return matrix_runner.differences(matrix_runner.comparable(reference, str(tmp_path / "local")),
                                         matrix_runner.comparable(got, str(remote)))

    same = json.loads(json.dumps(summary))
    same["tables"]["users"]["seconds"] = 9.0
    assert compared(same) == []
    wrong = json.loads(json.dumps(same))
    wrong["tables"]["users"]["updated"] = 3
    assert compared(wrong) == ["/summary/tables/users/updated: 2 != 3"]
    assert compared(None) and "/summary" in compared(None)[0]
