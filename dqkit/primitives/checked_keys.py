"""Key checks remembered for a DataFrame that cannot have changed since (issue #25, warm widget re-runs).

``dqkit.primitives.keys.check_key`` is one aggregation over the key before detection or repair trusts it. A widget
re-runs ``detect``/``repair`` on the same DataFrame object (its table listing keeps one per table), so
the second and later checks of the same key on the same rows only repeat the first one's answer.
``CheckedKeys`` remembers a *sound* key (a refusal raises and is never remembered) per DataFrame
object together with a signature of what the frame reads, and ``check_key_once`` asks it first.

Safety first, the check is skipped only when the rows cannot have changed:

* the DataFrame is the **same object** (held by a weak reference, so a new DataFrame with the same id
  after the old one was collected is never mistaken for it) and the key names the same columns;
* every leaf of its analysed plan is **local data** (``createDataFrame`` of rows or pandas, a range, a
  checkpoint) or **files on the local file system** (Parquet, CSV, JSON, ORC read by path or as a
  catalog table over files); then the signature is each input file's path, size, modification time
  (ns) and inode, taken again on every call (``os.stat``, no Spark job): a rewritten, replaced, added
  (after a refresh) or removed file gives another signature and the key is checked again;
* anything else is checked every time: a Hive table, JDBC or another data source, files on HDFS or an
  object store (their state is not cheap to read), and a Spark Connect DataFrame (its plan cannot be
  inspected from the client).
"""
from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote, urlparse

from pyspark.sql import DataFrame

from dqkit.primitives.keys import WITHOUT_KEY, check_key, key_columns

__all__ = ["CheckedKeys", "CHECKED_KEYS", "check_key_once", "input_signature"]

#: plan leaves whose rows are fixed once the DataFrame exists (local data, generated rows)
_FIXED_LEAVES = ("LocalRelation", "Range", "OneRowRelation")
#: roots of an RDD lineage that hold local data (``parallelize``, ``createDataFrame``) or a checkpoint
_FIXED_RDD_ROOTS = ("ParallelCollectionRDD", "LocalCheckpointRDD", "ReliableCheckpointRDD")
_MAX_LINEAGE = 200  # RDD lineage nodes walked before giving up (then: not fixed, checked every time)

Signature = tuple[tuple[str, int, int, int], ...]


def _simple_name(obj: Any) -> str:
    return str(obj.getClass().getSimpleName())


def _rdd_is_fixed(rdd: Any) -> bool:
    """Whether an RDD's lineage starts only from local data or a checkpoint (walked through py4j)."""
    seen, stack = 0, [rdd]
    while stack:
        r = stack.pop()
        seen += 1
        if seen > _MAX_LINEAGE:
            return False
        if bool(r.isCheckpointed()) or _simple_name(r) in _FIXED_RDD_ROOTS:
            continue
        deps = r.dependencies()
        n = int(deps.length())
        if n == 0:
            return False  # another root: files, a database, a stream
        stack.extend(deps.apply(i).rdd() for i in range(n))
    return True


def _local_file(uri: str) -> str | None:
    """The local path of a ``file:`` URI (or a bare path); None for any other file system."""
    parsed = urlparse(uri)
    if parsed.scheme not in ("", "file") or parsed.netloc not in ("", "localhost"):
        return None
    return unquote(parsed.path)


def input_signature(df: DataFrame) -> Signature | None:
    """What ``df`` reads, as ``(path, size, mtime_ns, inode)`` of each input file (sorted; empty for
    local data), or None when the rows might change without the signature showing it (see the module)."""
    jdf = getattr(df, "_jdf", None)
    if jdf is None:  # Spark Connect: the plan lives on the server
        return None
    try:
        leaves = jdf.queryExecution().analyzed().collectLeaves()
        files = False
        for i in range(int(leaves.length())):
            leaf = leaves.apply(i)
            kind = _simple_name(leaf)
            if kind in _FIXED_LEAVES:
                continue
            if kind == "LogicalRDD" and _rdd_is_fixed(leaf.rdd()):
                continue
            if kind == "LogicalRelation" and _simple_name(leaf.relation()) == "HadoopFsRelation":
                files = True
                continue
            return None
        out = []
        for uri in (df.inputFiles() if files else []):
            path = _local_file(uri)
            if path is None:
                return None
            st = os.stat(path)
            out.append((path, st.st_size, st.st_mtime_ns, st.st_ino))
        return tuple(sorted(out))
    except Exception:  # noqa: BLE001 - a plan we cannot read is a plan we do not trust
        return None


class CheckedKeys:
    """Sound keys remembered per DataFrame object and input signature (at most ``capacity`` of them,
    the least recently used dropped first). Thread-safe: widget runs call it from their own thread."""

    def __init__(self, capacity: int = 64) -> None:
        self.capacity = capacity
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[int, tuple[str, ...]], tuple[weakref.ref, Signature, int]] = OrderedDict()

    def rows(self, df: DataFrame, columns: Sequence[str], signature: Signature | None) -> int | None:
        """The row count remembered for a sound key ``columns`` of ``df`` with this ``signature``, or None."""
        if signature is None:
            return None
        k = (id(df), tuple(columns))
        with self._lock:
            entry = self._entries.get(k)
            if entry is None:
                return None
            ref, sig, rows = entry
            if ref() is not df or sig != signature:
                del self._entries[k]
                return None
            self._entries.move_to_end(k)
            return rows

    def remember(self, df: DataFrame, columns: Sequence[str], signature: Signature | None, rows: int) -> None:
        """Remember that ``columns`` is a sound key of ``df`` (``rows`` rows) while its inputs read ``signature``."""
        if signature is None:
            return
        k = (id(df), tuple(columns))
        with self._lock:
            self._entries[k] = (weakref.ref(df), signature, rows)
            self._entries.move_to_end(k)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


#: the process-wide cache ``check_key_once`` uses
CHECKED_KEYS = CheckedKeys()


def check_key_once(df: DataFrame, columns: str | Sequence[str], *, table: str, command: str,
                   without: str = WITHOUT_KEY, cache: CheckedKeys | None = None) -> int:
    """``dqkit.primitives.keys.check_key``, skipped when ``cache`` (default ``CHECKED_KEYS``) already holds the key
    as sound for this very DataFrame and unchanged inputs; returns the row count either way."""
    cache = CHECKED_KEYS if cache is None else cache
    cols = key_columns(columns)
    signature = input_signature(df) if all(c in df.columns for c in cols) else None
    rows = cache.rows(df, cols, signature)
    if rows is not None:
        return rows
    rows = check_key(df, cols, table=table, command=command, without=without)
    cache.remember(df, cols, signature, rows)
    return rows
