"""Faults survived (docs/reliability.md, "Faults survived"): every command that writes is SIGKILLed at a
point of its recorded timeline of writes (``DQKIT_FAULT_POINT``: before, during and after the commit of
its output), and then each output is as it was or complete, the inputs are unchanged, and the next run
works with no cleanup by hand; two runs saving one output at once; a full disk from the command line.

The killed commands run as Spark Connect clients of one server shared by the module (no JVM of their own,
so a kill costs about a second of CPU); where that server cannot start they run on local Spark.
``make faults`` (tests/support/faults_random.py) adds at least 20 random timer kills per command.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from dqkit.runtime import atomic

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"


@pytest.fixture(scope="module")
def backend():
    """``--remote URL`` of a Spark Connect server shared by this module's killed commands, or [] (local)."""
    from support.cluster import Cluster, ClusterUnavailable

    c = Cluster()
    try:
        url = c.connect("faults")
    except ClusterUnavailable as exc:
        print(f"\nfault kills run on local Spark: {exc}")
        c.stop()
        yield []
        return
    try:
        yield ["--remote", url]
    finally:
        c.stop()


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """The inputs, copied: each test checks they are byte for byte unchanged after a kill."""
    return make_work(tmp_path_factory.mktemp("faults"))


def make_work(w: Path) -> Path:
    """Copy the cases' inputs into ``w`` (also used by ``make faults``)."""
    shutil.copytree(DATA / "users", w / "users")
    for f in ("bigdansing_table1.csv", "bigdansing_table1_rules.yaml", "bigdansing_table1.changes.csv"):
        shutil.copy(DATA / f, w / f)
    shutil.copytree(DATA / "dedup", w / "dedup")
    shutil.copytree(DATA / "small_lake", w / "lake")
    (w / "cities.csv").write_text("tid,Zip,City\nt1,9001,Los Angeles\nt2,9001,San Francisco\n"
                                  "t3,9001,Los Angeles\nt4,10001,New York\n")
    (w / "cities_rules.txt").write_text("Zip -> City\n")
    import sqlite3

    db = sqlite3.connect(w / "db.sqlite")
    db.execute("CREATE TABLE s (k int, v text)")
    db.execute("CREATE TABLE t (k int, v text)")
    db.executemany("INSERT INTO s VALUES (?, ?)", [(i, f"v{i}") for i in range(20)])
    db.executemany("INSERT INTO t VALUES (?, ?)", [(i, f"v{i}" if i != 7 else "x") for i in range(20)])
    db.commit()
    db.close()
    url = f"sqlite:///{(w / 'db.sqlite').as_posix()}"
    (w / "tcfc.json").write_text(json.dumps({"pairs": [
        {"name": "p", "source": {"url": url, "table": "s"}, "target": {"url": url, "table": "t"},
         "aggregates": [["count", "*", "n"]], "levels": [[], ["k"]]}]}))
    return w


def _tree(path: Path) -> dict[str, str]:
    """Every file under ``path`` (or ``path`` itself) by relative name, with the hash of its bytes."""
    if path.is_file():
        return {"": hashlib.sha256(path.read_bytes()).hexdigest()}
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob("*")) if p.is_file()}


def _complete(path: Path, kind: str) -> bool:
    """The output reads back whole, as its writer makes it."""
    if kind == "folder":
        frames = {p.parent for p in path.rglob("part-*")}
        return ((path / "summary.json").is_file() and bool(json.loads((path / "summary.json").read_text()))
                and (path / "report.html").is_file() and all((f / "_SUCCESS").is_file() for f in frames))
    if kind == "state":
        return (path / "state.json").is_file() and any((path / "tables").rglob("*.parquet"))
    if kind == "json":
        return bool(json.loads(path.read_text()))
    if kind == "html":
        return "</html>" in path.read_text()
    return path.is_file() and path.stat().st_size > 0 and "," in path.read_text().splitlines()[0]


def _temporaries(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p.name.startswith(f".{path.name}."))


def _inputs(work: Path) -> dict[str, str]:
    return {k: v for k, v in _tree(work).items() if not k.startswith("out")}


@dataclass
class Case:
    """A writing command: its arguments ({W} the inputs, {O} the output folder), its outputs and their
    kinds, the point it is killed at, and what it had written before (``previous``: a sentinel)."""

    argv: list[str]
    outputs: dict[str, str]
    point: str
    previous: bool = True
    overwrite: bool = True
    code: tuple[int, ...] = (0, 1)
    setup: list[list[str]] = field(default_factory=list)


_DEDUP = ["--key", "rec_id", "--config", "{W}/dedup/dedup.yaml", "--csv"]
_TABLE1 = ["{W}/bigdansing_table1.csv", "--rules", "{W}/bigdansing_table1_rules.yaml", "--key", "tid"]
_QUERY = ["query", "--table", "cities={W}/cities.csv", "--rules", "cities={W}/cities_rules.txt", "--key", "cities=tid",
          "--state", "{O}/state", "SELECT Zip FROM cities WHERE City = 'Los Angeles'"]
CASES = {
    "delta": Case(["delta", "{W}/users/old", "{W}/users/new", "--out", "{O}/out"], {"out": "folder"}, "mid-write"),
    "detect": Case(["detect", *_TABLE1, "--out", "{O}/out"], {"out": "folder"}, "before-rename"),
    "repair": Case(["repair", *_TABLE1, "--out", "{O}/out"], {"out": "folder"}, "after-rename"),
    "repair-files": Case(["repair", *_TABLE1, "--out", "{O}/r.csv"], {"r.csv": "csv", "r.changes.csv": "csv"},
                         "mid-commit"),
    "repair-dry-run": Case(["repair", *_TABLE1, "--dry-run", "--out", "{O}/r.csv"], {"r.changes.csv": "csv"},
                           "before-rename", previous=False),
    "review": Case(["review", "{W}/bigdansing_table1.changes.csv", "--to", "{W}/bigdansing_table1.csv", "--key", "tid",
                    "--out", "{O}/out"], {"out": "folder"}, "mid-write"),
    "dedup": Case(["dedup", "{W}/dedup/people.csv", *_DEDUP, "--out", "{O}/out"], {"out": "folder"}, "before-rename"),
    "dedup-since": Case(["dedup", "{W}/dedup/people_night2.csv", *_DEDUP, "--since", "{O}/night1", "--out", "{O}/out"],
                        {"out": "folder"}, "after-rename",
                        setup=[["dedup", "{W}/dedup/people.csv", *_DEDUP, "--out", "{O}/night1"]]),
    "tcfc-reuse": Case(["tcfc", "--spec", "{W}/tcfc.json", "--reuse", "{O}/reuse"], {"reuse/tcfc_state.json": "json"},
                       "before-rename", previous=False, overwrite=False),
    "lake": Case(["lake", "{W}/lake", "--out", "{O}/out"], {"out": "folder"}, "mid-write"),
    "query-state": Case(_QUERY, {"state": "state"}, "mid-write", previous=False, overwrite=False),
    "report": Case(["report", "delta", "-p", "old", "{W}/users/old", "-p", "new", "{W}/users/new", "-o", "{O}/rep"],
                   {"rep/delta_report.html": "html", "rep/delta_report.ipynb": "json"}, "mid-commit",
                   overwrite=False, code=(0,)),
}


def _argv(argv: list[str], work: Path, out: Path) -> list[str]:
    return [a.replace("{W}", str(work)).replace("{O}", str(out)) for a in argv]


def _kill(backend: list[str], argv: list[str], point: str, log: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", atomic.FAULT_ENV)}
    env.update(PYTHONPATH=str(ROOT), **{atomic.FAULT_ENV: point, atomic.FAULT_LOG_ENV: str(log)})
    return subprocess.run([sys.executable, "-m", "dqkit.cli", *backend, *argv], capture_output=True, text=True,
                          env=env, timeout=600, cwd=ROOT)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_command_killed_at_a_point_of_its_writes_leaves_each_output_as_it_was_or_complete(
        name, backend, work, tmp_path, spark, capsys, monkeypatch):
    from dqkit.cli import main

    case = CASES[name]
    out = tmp_path / "o"
    out.mkdir()
    for setup in case.setup:
        assert main(_argv(setup, work, out)) in (0, 1)
    outputs = {out / rel: kind for rel, kind in case.outputs.items()}
    for path, kind in outputs.items():
        if case.previous:  # what an earlier run left: it must stay whole if the kill comes before the commit
            if kind == "folder":
                path.mkdir(parents=True)
                (path / "previous.txt").write_text("the previous output")
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text("the previous output\n")
    before = {p: _tree(p) if p.exists() else None for p in outputs}
    inputs = _inputs(work)
    argv = _argv(case.argv, work, out) + (["--overwrite"] if case.overwrite and case.previous else [])

    log = tmp_path / "timeline.txt"
    killed = _kill(backend, argv, case.point, log)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    timeline = log.read_text().split()
    assert timeline[-1] == case.point  # it died exactly there, after these writes
    for path, kind in outputs.items():
        now = _tree(path) if path.exists() else None
        assert now == before[path] or _complete(path, kind), (name, path, timeline)
    if case.point in ("before-rename", "mid-write", "start-write"):
        assert all((_tree(p) if p.exists() else None) == before[p] for p in outputs)  # nothing committed yet
    assert _inputs(work) == inputs

    monkeypatch.setenv(atomic.FAULT_LOG_ENV, str(tmp_path / "next.txt"))
    capsys.readouterr()
    code = main(argv)  # the next run: no cleanup by hand
    err = capsys.readouterr().err
    assert code in case.code, err
    for path, kind in outputs.items():
        assert _complete(path, kind), (name, path)
        assert _temporaries(path) == [], (name, path)
    assert case.point in (tmp_path / "next.txt").read_text().split()  # the point is one of its writes
    assert _inputs(work) == inputs


def test_two_saves_of_one_fresh_out_at_once_one_wins_whole_and_the_other_is_refused(spark, work, tmp_path,
                                                                                     monkeypatch):
    """Two delta results saved into one fresh ``--out`` by two threads, their commits forced to meet (both
    passed the --out check): one saves, the other gets ``OutputTakenError`` (exit 2 from the command line)
    naming the output; the folder is the winner's, whole (on main both reported success)."""
    from dqkit.contract import render
    from dqkit.errors import OutputTakenError
    from dqkit.systems import get

    delta = get("delta")
    results = {name: delta.run(delta.prepare({"old": str(work / "users/old"), "new": str(work / new)}), spark=spark)
               for name, new in (("changed", "users/new"), ("same", "users/old"))}
    real, barrier = render.atomic_folder, threading.Barrier(2, timeout=120)

    def together(target, write, **kwargs):
        barrier.wait()  # both have passed the --out check; both write and commit now
        return real(target, write, **kwargs)

    monkeypatch.setattr(render, "atomic_folder", together)
    out, outcomes = tmp_path / "out", {}

    def save(name):
        try:
            results[name].save(out)
            outcomes[name] = "saved"
        except OutputTakenError as exc:
            outcomes[name] = str(exc)

    threads = [threading.Thread(target=save, args=(n,)) for n in results]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert sorted(outcomes) == ["changed", "same"]
    winner = [n for n, o in outcomes.items() if o == "saved"]
    assert len(winner) == 1, outcomes
    loser = next(o for o in outcomes.values() if o != "saved")
    assert "was written by another run while this one ran" in loser and str(out) in loser
    saved = json.loads((out / "summary.json").read_text())
    differences = saved["tables"]["users"]["row_stats"]["differences"]
    assert (differences == 0) == (winner[0] == "same")  # the winner's summary, and its frames beside it
    assert _complete(out, "folder") and _temporaries(out) == []


def test_two_queries_sharing_one_state_one_saves_and_the_other_is_refused(spark, work, tmp_path):
    """Daisy saves a ``--state`` only if it is still the one it loaded: of two queries that loaded the
    same state, the second to save is refused (exit 2 from the command line) and the state is the first's."""
    from dqkit.errors import OutputTakenError
    from dqkit.relax import Daisy
    from dqkit.relax.state import state_generation

    state = tmp_path / "state"

    def daisy():
        d = Daisy(spark)
        d.register("cities", str(work / "cities.csv"), key="tid")
        d.add_rules("cities", ["Zip -> City"])
        d.load_state(state)
        return d

    first, second = daisy(), daisy()
    first.query("SELECT Zip FROM cities WHERE City = 'Los Angeles'").materialize()
    first.save_state(state)
    saved = state_generation(state)
    second.query("SELECT City FROM cities WHERE Zip = 9001").materialize()
    with pytest.raises(OutputTakenError, match="was replaced by another query"):
        second.save_state(state)
    assert state_generation(state) == saved and _temporaries(state) == []
    again = daisy()  # a query started after the first save builds on it and saves
    again.save_state(state)
    assert state_generation(state) not in (saved, None)


def test_a_full_disk_exits_2_naming_the_out_and_no_space_and_leaves_nothing(spark, work, tmp_path, capsys):
    """A real full disk: ``--out`` on a 256 KiB tmpfs (root only; skipped, saying why, elsewhere)."""
    from dqkit.cli import main

    if os.geteuid() != 0:
        pytest.skip("a full disk needs a small tmpfs, which only root can mount here")
    disk = tmp_path / "disk"
    disk.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(disk)], capture_output=True,
                          text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs to fill: {made.stderr.strip()}")
    try:
        (disk / "filler").write_bytes(b"x" * (240 << 10))  # the rest is too small for a delta's output
        inputs = _inputs(work)
        out = disk / "out"
        code = main(["delta", str(work / "users/old"), str(work / "users/new"), "--out", str(out)])
        err = capsys.readouterr().err
        assert code == 2, err
        assert "no space left on device" in err and str(out) in err
        assert ".tmp+" not in err and "Traceback" not in err and "Py4J" not in err
        assert sorted(p.name for p in disk.iterdir()) == ["filler"]  # nothing partial, no temporary
        assert _inputs(work) == inputs
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_tcfc_losing_its_database_mid_run_keeps_what_was_proven_and_the_next_reuse_run_completes(
        work, tmp_path, capsys, monkeypatch):
    """The database goes away after the roots were compared (the per-key level fails as a lost server
    fails): exit 2 in one line, the --reuse state keeps the proven leaves (UNCOMPLETED, the rest
    pending); the next --reuse run against the database that is back completes, reusing them."""
    from dqkit.cli import main
    from dqkit.tcfc.engines.sqlite import SqliteEngine

    url = f"sqlite:///{(work / 'db.sqlite').as_posix()}"
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"pairs": [
        {"name": name, "source": {"url": url, "table": "s"}, "target": {"url": url, "table": target},
         "aggregates": [["count", "*", "n"], ["max", "v", "v"]], "levels": [[], ["k"]]}
        for name, target in (("changed", "t"), ("same", "s"))]}))
    reuse = tmp_path / "reuse"
    real = SqliteEngine.aggregate

    def lost(self, bound, X, *args, **kwargs):
        if list(X) == ["k"]:
            raise ConnectionError("server closed the connection unexpectedly")
        return real(self, bound, X, *args, **kwargs)

    monkeypatch.setattr(SqliteEngine, "aggregate", lost)
    assert main(["tcfc", "--spec", str(spec), "--reuse", str(reuse)]) == 2
    err = capsys.readouterr().err
    assert "server closed the connection unexpectedly" in err and "Traceback" not in err
    kept = json.loads((reuse / "tcfc_state.json").read_text())
    assert kept["status"] == "UNCOMPLETED"
    assert kept["pairs"]["same"]["examined"] == 1 and not kept["pairs"]["same"]["pending"]  # proven equal
    assert [r["level"] for r in kept["pairs"]["changed"]["report"]] == [1]  # proven different at the root
    assert [j["level"] for j in kept["pairs"]["changed"]["pending"]] == [2]  # its per-key level still to do
    monkeypatch.setattr(SqliteEngine, "aggregate", real)  # the server is back
    assert main(["tcfc", "--spec", str(spec), "--reuse", str(reuse), "--format", "json"]) == 1
    capsys.readouterr()
    done = json.loads((reuse / "tcfc_state.json").read_text())
    assert done["status"] == "COMPLETED" and not done["pairs"]["changed"]["pending"]
    assert any(r["reused"] for r in done["pairs"]["changed"]["report"])  # the kept leaf, not recomputed
    assert _temporaries(reuse / "tcfc_state.json") == []
