"""Checkpoint folders: local checkpoints in local mode, reliable ones (files on shared storage) on a cluster
or where a folder is set, and nothing left behind by a run."""
from __future__ import annotations

import pytest

from dqkit.runtime import checkpoints
from dqkit.runtime import sparkutil
from dqkit.runtime.checkpoints import CHECKPOINT_ENV, checkpoint_scope
from dqkit.runtime.sparkutil import checkpoint, checkpoint_folder


@pytest.fixture
def fresh_context(spark, monkeypatch):
    """The shared session with no checkpoint folder, before and after (Spark's setting is sticky)."""
    def clear():
        jsc = spark.sparkContext._jsc.sc()
        getattr(jsc, "checkpointDir_$eq")(spark.sparkContext._jvm.scala.Option.apply(None))

    monkeypatch.delenv(CHECKPOINT_ENV, raising=False)
    clear()
    yield spark
    clear()


def _files(folder):
    return sorted(p.name for p in folder.rglob("*") if p.is_file())


def test_a_local_session_without_a_folder_takes_a_local_checkpoint_and_writes_no_file(fresh_context, tmp_path):
    spark = fresh_context
    assert checkpoint_folder(spark) is None
    df = checkpoint(spark.range(5))
    assert sorted(r.id for r in df.collect()) == [0, 1, 2, 3, 4]
    assert checkpoint_folder(spark) is None


def test_a_given_folder_gets_reliable_checkpoints_and_the_run_s_subfolder_goes_at_the_end(fresh_context, tmp_path):
    spark = fresh_context
    given = tmp_path / "ckpt"
    with checkpoint_scope(str(given), None):
        df = checkpoint(spark.range(7))
        assert df.count() == 7
        assert str(given) in checkpoint_folder(spark)
        assert _files(given), "a reliable checkpoint writes its partitions as files"
    assert given.is_dir() and list(given.iterdir()) == []  # the user's folder stays, emptied of this run


def test_a_given_folder_is_the_command_s_only_and_a_later_command_in_the_process_does_not_inherit_it(
        fresh_context, tmp_path, monkeypatch):
    import os

    monkeypatch.setenv(CHECKPOINT_ENV, str(tmp_path / "outer"))
    with checkpoint_scope(str(tmp_path / "inner"), None):
        assert os.environ[CHECKPOINT_ENV] == str(tmp_path / "inner")
    assert os.environ[CHECKPOINT_ENV] == str(tmp_path / "outer")
    monkeypatch.delenv(CHECKPOINT_ENV)
    with checkpoint_scope(str(tmp_path / "inner"), None):
        pass
    assert CHECKPOINT_ENV not in os.environ
    assert checkpoint_folder(fresh_context) is None  # local mode again: a local checkpoint, no files


def test_on_a_cluster_without_a_folder_checkpoints_go_beside_out_and_are_removed(fresh_context, tmp_path,
                                                                                  monkeypatch):
    spark = fresh_context
    monkeypatch.setattr(sparkutil, "_is_local_master", lambda master: False)  # as on spark://...
    with checkpoint_scope(None, str(tmp_path / "out")):
        assert checkpoint(spark.range(3)).count() == 3
        beside = [p for p in tmp_path.iterdir() if p.name.startswith(".out.ckpt+")]
        assert len(beside) == 1 and _files(beside[0])
    assert list(tmp_path.iterdir()) == [] and checkpoints.created == []


def test_a_checkpoint_dir_that_is_a_file_is_refused_before_any_work(tmp_path, capsys):
    from dqkit.cli import main

    afile = tmp_path / "f"
    afile.write_text("x")
    code = main(["--checkpoint-dir", str(afile), "delta", str(tmp_path / "a"), str(tmp_path / "b")])
    assert code == 2 and "is a file, not a folder" in capsys.readouterr().err


def test_each_command_of_a_process_on_a_cluster_gets_its_own_folder_and_both_are_removed(fresh_context, tmp_path,
                                                                                        monkeypatch):
    spark = fresh_context
    monkeypatch.setattr(sparkutil, "_is_local_master", lambda master: False)
    folders = []
    for name in ("first", "second"):  # Spark keeps a context's last checkpoint folder: dqkit chooses again
        with checkpoint_scope(None, str(tmp_path / name)):
            assert checkpoint(spark.range(2)).count() == 2
            folders.append(checkpoint_folder(spark))
            assert f"/.{name}.ckpt+" in folders[-1]
    assert folders[0] != folders[1] and list(tmp_path.iterdir()) == []


def test_spark_s_own_checkpoint_folder_is_honoured_and_a_given_folder_wins_over_it(fresh_context, tmp_path):
    spark = fresh_context
    spark.sparkContext.setCheckpointDir(str(tmp_path / "spark"))  # as spark.checkpoint.dir does at start
    assert "/spark/" in checkpoint_folder(spark)
    with checkpoint_scope(str(tmp_path / "given"), None):
        assert checkpoint(spark.range(4)).count() == 4
        assert "/given/" in checkpoint_folder(spark) and _files(tmp_path / "given")
    assert list((tmp_path / "given").iterdir()) == []
