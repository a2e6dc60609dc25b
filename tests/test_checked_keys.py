"""A key check is remembered for the same DataFrame over unchanged inputs, and only then (issue #25)."""
from __future__ import annotations

import gc
import os

import pytest

import dqkit.primitives.checked_keys as ck
from dqkit.primitives.checked_keys import CheckedKeys, check_key_once, input_signature
from dqkit.detect import detect
from dqkit.errors import InvalidKeyError
from dqkit.repair import repair


@pytest.fixture
def key_checks(monkeypatch):
    """The key checks that really ran (``dqkit.primitives.keys.check_key`` calls made through the cache)."""
    calls: list[str] = []
    real = ck.check_key

    def counted(df, columns, **kw):
        calls.append(kw["command"])
        return real(df, columns, **kw)
    monkeypatch.setattr(ck, "check_key", counted)
    return calls


def _csv(path, rows) -> None:
    path.write_text("id,zip,city\n" + "".join(f"{i},{z},{c}\n" for i, z, c in rows), encoding="utf-8")


def test_a_rerun_on_the_same_dataframe_checks_its_key_once(spark, key_checks):
    df = spark.createDataFrame([(1, "1", "a"), (2, "1", "b"), (3, "2", "c")], "id long, zip string, city string")
    first = detect(df, "f: zip -> city", key="id", spark=spark)
    again = detect(df, "g: zip -> city", key="id", spark=spark)
    assert key_checks == ["detect"] and first.counts == {"f": 1} and again.counts == {"g": 1}
    repair(df, "f: zip -> city", key="id", spark=spark)  # repair trusts the same check
    assert key_checks == ["detect"]


def test_another_dataframe_over_the_same_rows_is_checked_again(spark, key_checks):
    rows = [(1, "1", "a"), (2, "1", "b")]
    detect(spark.createDataFrame(rows, "id long, zip string, city string"), "f: zip -> city", key="id", spark=spark)
    detect(spark.createDataFrame(rows, "id long, zip string, city string"), "f: zip -> city", key="id", spark=spark)
    df = spark.createDataFrame(rows, "id long, zip string, city string")
    detect(df.where("id > 0"), "f: zip -> city", key="id", spark=spark)  # a derived frame is another object
    assert key_checks == ["detect"] * 3


def test_a_refused_key_is_never_remembered(spark, key_checks):
    df = spark.createDataFrame([(1, "1", "a"), (1, "1", "b")], "id long, zip string, city string")
    for _ in range(2):
        with pytest.raises(InvalidKeyError, match="not unique"):
            detect(df, "f: zip -> city", key="id", spark=spark)
    assert key_checks == ["detect", "detect"]


def test_a_changed_file_is_checked_again_and_its_repeated_key_refused(spark, tmp_path, key_checks):
    path = tmp_path / "t.csv"
    _csv(path, [(1, 1, "a"), (2, 1, "b"), (3, 2, "c")])
    df = spark.read.csv(str(path), header=True, schema="id long, zip string, city string")
    detect(df, "f: zip -> city", key="id", spark=spark)
    detect(df, "f: zip -> city", key="id", spark=spark)
    assert key_checks == ["detect"]
    before = os.stat(path)
    _csv(path, [(1, 1, "a"), (2, 1, "b"), (1, 2, "c")])  # same size, key 1 repeated
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
    assert os.stat(path).st_size == before.st_size
    with pytest.raises(InvalidKeyError, match="not unique"):
        detect(df, "f: zip -> city", key="id", spark=spark)
    assert key_checks == ["detect", "detect"]


def test_the_input_signature_names_local_files_and_is_empty_for_local_data(spark, tmp_path):
    path = tmp_path / "t.csv"
    _csv(path, [(1, 1, "a")])
    df = spark.read.csv(str(path), header=True, schema="id long, zip string, city string")
    [(name, size, mtime, inode)] = input_signature(df.where("id > 0").select("id"))
    st = os.stat(path)
    assert (name, size, mtime, inode) == (str(path), st.st_size, st.st_mtime_ns, st.st_ino)
    assert input_signature(spark.createDataFrame([(1,)], "id long")) == ()
    assert input_signature(spark.range(3)) == ()
    path.write_text(path.read_text() + "2,1,b\n")
    assert input_signature(df) != ((name, size, mtime, inode),)


def test_a_frame_on_another_file_system_or_from_an_unknown_source_has_no_signature(spark, tmp_path, monkeypatch):
    assert ck._local_file("hdfs://nn/x.parquet") is None and ck._local_file("s3a://b/x") is None
    assert ck._local_file("file:///tmp/a%20b.csv") == "/tmp/a b.csv"
    path = tmp_path / "t.csv"
    _csv(path, [(1, 1, "a")])
    df = spark.read.csv(str(path), header=True, schema="id long, zip string, city string")
    monkeypatch.setattr(ck, "_local_file", lambda uri: None)  # as if the file were on HDFS
    assert input_signature(df) is None
    monkeypatch.setattr(ck, "_FIXED_LEAVES", ())  # as if local rows came from an unknown source
    monkeypatch.setattr(ck, "_FIXED_RDD_ROOTS", ())
    assert input_signature(spark.range(2)) is None
    assert input_signature(spark.createDataFrame([(1,)], "id long")) is None


def test_without_a_signature_the_key_is_checked_every_time(spark, key_checks, monkeypatch):
    monkeypatch.setattr(ck, "input_signature", lambda df: None)
    df = spark.createDataFrame([(1, "1", "a")], "id long, zip string, city string")
    cache = CheckedKeys()
    for _ in range(2):
        assert check_key_once(df, "id", table="t", command="detect", cache=cache) == 1
    assert key_checks == ["detect", "detect"] and len(cache) == 0


class _Frame:
    """Any object stands for a DataFrame in the cache (it keys on identity and a weak reference)."""


def test_the_cache_matches_object_columns_and_signature_and_forgets_the_least_recent():
    cache = CheckedKeys(capacity=2)
    a, b, c = _Frame(), _Frame(), _Frame()
    sig = (("/x", 1, 2, 3),)
    cache.remember(a, ("id",), sig, 10)
    assert cache.rows(a, ("id",), sig) == 10
    assert cache.rows(a, ("other",), sig) is None and cache.rows(b, ("id",), sig) is None
    assert cache.rows(a, ("id",), (("/x", 1, 3, 3),)) is None  # a changed file: forgotten
    assert cache.rows(a, ("id",), sig) is None
    cache.remember(a, ("id",), sig, 10)
    cache.remember(b, ("id",), sig, 11)
    assert cache.rows(a, ("id",), sig) == 10  # a used last: b is the least recent
    cache.remember(c, ("id",), sig, 12)
    assert cache.rows(b, ("id",), sig) is None and cache.rows(a, ("id",), sig) == 10
    assert cache.rows(a, ("id",), None) is None


def test_a_collected_frame_is_never_mistaken_for_a_new_one_at_its_address():
    cache = CheckedKeys()
    a = _Frame()
    cache.remember(a, ("id",), (), 1)
    ident = id(a)
    del a
    gc.collect()
    entry = cache._entries[(ident, ("id",))]
    assert entry[0]() is None  # the weak reference is dead: a new object at that id does not match
    b = _Frame()
    if id(b) == ident:
        assert cache.rows(b, ("id",), ()) is None


def test_repair_trusting_the_key_checks_nothing(spark, key_checks):
    df = spark.createDataFrame([(1, "1", "a"), (2, "1", "b"), (3, "1", "b")], "id long, zip string, city string")
    res = repair(df, "f: zip -> city", key="id", spark=spark, trust_key=True)
    assert key_checks == [] and res.changed_cells == 1
