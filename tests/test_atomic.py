"""dqkit.runtime.atomic: the one implementation of atomic outputs (files and folders); no Spark needed."""
from __future__ import annotations

import pytest

from dqkit.runtime.atomic import atomic_file, atomic_folder


def test_atomic_file_replaces_the_target_whole_and_leaves_no_temporary_sibling(tmp_path):
    target = tmp_path / "state.json"
    target.write_text("old", encoding="utf-8")
    atomic_file(target, lambda tmp: tmp.write_text("new", encoding="utf-8"))
    assert target.read_text(encoding="utf-8") == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_atomic_file_leaves_the_target_as_it_was_when_the_write_fails(tmp_path):
    target = tmp_path / "report.html"
    target.write_text("complete", encoding="utf-8")

    def half(tmp):
        tmp.write_text("half", encoding="utf-8")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        atomic_file(target, half)
    assert target.read_text(encoding="utf-8") == "complete"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


def test_atomic_folder_leaves_no_half_written_folder_when_the_write_fails(tmp_path):
    def half(tmp):
        (tmp / "part").write_text("x", encoding="utf-8")
        raise RuntimeError("cancelled")

    with pytest.raises(RuntimeError):
        atomic_folder(tmp_path / "out", half)
    assert list(tmp_path.iterdir()) == []


def test_the_state_files_of_tcfc_and_the_report_pages_are_written_by_the_one_atomic_writer():
    """One implementation: the modules that write a file atomically call dqkit.runtime.atomic, none renames by itself."""
    import inspect

    import dqkit.report.runner
    import dqkit.tcfc.state

    for mod in (dqkit.report.runner, dqkit.tcfc.state):
        src = inspect.getsource(mod)
        assert ("atomic_file(" in src or "atomic_files(" in src) and "os.replace(" not in src, mod.__name__


# ------------------------------------------------------------------------------------------------
# Faults (docs/reliability.md, "Faults survived"): real SIGKILLs of small Python processes (no Spark)
# ------------------------------------------------------------------------------------------------
import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from dqkit.errors import DiskFullError, OutputTakenError  # noqa: E402
from dqkit.runtime import atomic  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

# writes folder OUT holding one file per name, each with TEXT, through dqkit's atomic writer
_WRITER = """
import sys, time
from pathlib import Path
from dqkit.runtime import atomic
if {no_exchange}:
    atomic._renameat2 = lambda src, dst, flags: False
kind, target, text, overwrite, pause = sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4] == "1", float(sys.argv[5])
def write(tmp):
    for name in ("a", "b", "c"):
        (tmp / name).write_text(text)
        atomic.fault_point("mid-write")
        time.sleep(pause)
if kind == "folder":
    atomic.atomic_folder(target, write, overwrite=overwrite)
elif kind == "files":
    atomic.atomic_files({{target.with_name(target.name + n): (lambda n: lambda t: t.write_text(text))(n)
                         for n in ("1", "2")}}, overwrite=overwrite)
else:
    atomic.atomic_file(target, lambda t: t.write_text(text), overwrite=overwrite)
"""


def _writer(kind, target, text, *, overwrite=True, pause=0.0, fault=None, no_exchange=False, wait=True):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop(atomic.FAULT_ENV, None)
    if fault:
        env[atomic.FAULT_ENV] = fault
    args = [sys.executable, "-c", _WRITER.format(no_exchange=no_exchange), kind, str(target), text,
            "1" if overwrite else "0", str(pause)]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if wait:
        proc.communicate(timeout=60)
    return proc


def _folder_text(folder: Path) -> set[str]:
    return {p.read_text() for p in folder.iterdir()} if folder.exists() else set()


def _temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_a_temporary_is_named_for_its_owner_and_a_live_owners_is_never_swept(tmp_path):
    name = atomic.temp_name(tmp_path / "out")
    parsed = atomic.parse_temp(name.name)
    assert parsed is not None and parsed[0] == "out" and parsed[1] == "tmp"
    assert parsed[2] == atomic.me() and parsed[2].pid == os.getpid()
    assert atomic.owner_alive(parsed[2])
    name.mkdir()
    other_host = tmp_path / f".out.tmp+elsewhere+{os.getpid() + 1}+1+0badc0de"
    other_host.mkdir()  # another machine's run: its processes cannot be seen, so it is never removed
    assert atomic.sweep(tmp_path / "out") == []
    assert name.exists() and other_host.exists()
    assert atomic.parse_temp("out") is None and atomic.parse_temp(".out.tmp-1234abcd") is None


def test_a_pid_reused_by_another_process_does_not_keep_a_dead_owners_temporary(tmp_path):
    me = atomic.me()
    reused = tmp_path / f".out.tmp+{me.host}+{me.pid}+{int(me.start) + 1}+00000001"  # our PID, another start
    reused.mkdir()
    assert atomic.sweep(tmp_path / "out") == [reused]


@pytest.mark.parametrize("point", ["start-write", "mid-write", "before-rename", "after-rename"])
@pytest.mark.parametrize("existing", [False, True], ids=["fresh", "replaced"])
def test_a_write_killed_at_each_point_leaves_the_output_as_it_was_or_complete_and_the_next_run_cleans(
        tmp_path, point, existing):
    out = tmp_path / "out"
    if existing:
        _writer("folder", out, "old")
    proc = _writer("folder", out, "new", fault=point)
    assert proc.returncode == -signal.SIGKILL
    assert _folder_text(out) in ({"old"} if existing else set(), {"new"})  # never a mix, never partial
    if point == "after-rename":
        assert _folder_text(out) == {"new"}
    if existing or point != "after-rename":
        assert _temporaries(tmp_path), "a killed write leaves its temporary (the test's premise)"
    again = _writer("folder", out, "next")
    assert again.returncode == 0 and _folder_text(out) == {"next"}
    assert _temporaries(tmp_path) == []  # the next run removed what the killed one left


def test_a_swap_killed_between_its_two_renames_is_put_back_by_the_next_sweep(tmp_path):
    """Where the file system has no RENAME_EXCHANGE the previous output is moved aside first: a kill
    right then leaves no output under its name; the next sweep renames the previous one back."""
    out = tmp_path / "out"
    _writer("folder", out, "old")
    proc = _writer("folder", out, "new", fault="mid-commit", no_exchange=True)
    assert proc.returncode == -signal.SIGKILL and not out.exists()
    atomic.sweep(out)
    assert _folder_text(out) == {"old"} and _temporaries(tmp_path) == []


def test_a_multi_file_commit_killed_between_renames_is_finished_by_the_next_run(tmp_path):
    first = tmp_path / "r"
    _writer("files", first, "old")
    proc = _writer("files", first, "new", fault="mid-commit")
    assert proc.returncode == -signal.SIGKILL
    assert [(tmp_path / n).read_text() for n in ("r1", "r2")] == ["new", "old"]  # the kill's moment
    atomic.sweep(tmp_path / "r1")  # any later write of these files, or an --out check, sweeps first
    assert [(tmp_path / n).read_text() for n in ("r1", "r2")] == ["new", "new"]
    assert _temporaries(tmp_path) == []


def test_the_sweep_leaves_a_running_writers_temporary_and_removes_a_killed_ones(tmp_path):
    out = tmp_path / "out"
    running = _writer("folder", out, "slow", pause=0.5, wait=False)
    try:
        deadline = time.monotonic() + 30
        while not _temporaries(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.02)
        live = _temporaries(tmp_path)
        assert live
        killed = _writer("folder", out, "killed", fault="mid-write")
        assert killed.returncode == -signal.SIGKILL
        removed = atomic.sweep(out)
        assert len(removed) == 1 and removed[0].name not in live
        assert set(live) <= set(_temporaries(tmp_path))  # the live writer's temporary is untouched
    finally:
        running.communicate(timeout=60)
    assert running.returncode == 0 and _folder_text(out) == {"slow"} and _temporaries(tmp_path) == []


@pytest.mark.parametrize("kind", ["folder", "file"])
def test_two_runs_writing_one_fresh_output_one_wins_whole_and_the_other_is_refused(tmp_path, kind):
    out = tmp_path / "out"
    procs = [_writer(kind, out, text, overwrite=False, pause=0.2, wait=False) for text in ("one", "two")]
    results = [p.communicate(timeout=60) + (p.returncode,) for p in procs]
    codes = sorted(r[2] for r in results)
    assert codes == [0, 1], results
    loser = next(r for r in results if r[2] == 1)
    assert "OutputTakenError" in loser[1] and "was written by another run" in loser[1]
    winner = ("one", "two")[[r[2] for r in results].index(0)]
    got = _folder_text(out) if kind == "folder" else {out.read_text()}
    assert got == {winner}  # whole, never a mix
    assert _temporaries(tmp_path) == []


def test_two_threads_saving_one_fresh_folder_one_wins_whole(tmp_path):
    out, outcomes = tmp_path / "out", []
    barrier = threading.Barrier(2)

    def run(text):
        def write(tmp):
            (tmp / "a").write_text(text)
            barrier.wait()  # both have written; both commit now
            (tmp / "b").write_text(text)
        try:
            atomic.atomic_folder(out, write, overwrite=False)
            outcomes.append(("ok", text))
        except OutputTakenError:
            outcomes.append(("taken", text))

    threads = [threading.Thread(target=run, args=(t,)) for t in ("x", "y")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(o[0] for o in outcomes) == ["ok", "taken"]
    assert _folder_text(out) == {next(t for k, t in outcomes if k == "ok")}


def test_concurrent_updates_of_one_file_all_land(tmp_path):
    """Appends (e.g. a history) through ``update_file`` are serialised: every one of 6 processes lands."""
    target = tmp_path / "history.jsonl"
    code = ("import sys; from dqkit.runtime.atomic import update_file\n"
            "for i in range(5):\n"
            "    update_file(sys.argv[1], lambda old: (old or '') + sys.argv[2] + str(i) + '\\n')\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", code, str(target), f"p{n}-"], env=env) for n in range(6)]
    assert [p.wait(60) for p in procs] == [0] * 6
    lines = target.read_text().splitlines()
    assert sorted(lines) == sorted(f"p{n}-{i}" for n in range(6) for i in range(5))
    assert _temporaries(tmp_path) == []


def _small_tmpfs(tmp_path: Path, size: str = "256k") -> Path:
    """A real small file system (tmpfs) mounted in ``tmp_path``; skips, saying why, where it cannot be made."""
    if os.geteuid() != 0:
        pytest.skip("a full disk needs a small tmpfs, which only root can mount here")
    disk = tmp_path / "disk"
    disk.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(disk)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs to fill: {made.stderr.strip()}")
    return disk


@pytest.fixture
def full_disk(tmp_path):
    disk = _small_tmpfs(tmp_path)
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=False)


def test_a_full_disk_names_the_output_not_the_temporary_and_leaves_it_as_it_was(full_disk):
    out = full_disk / "out"
    atomic.atomic_folder(out, lambda tmp: (tmp / "a").write_text("complete"))

    def big(tmp):
        (tmp / "a").write_bytes(b"x" * (1 << 20))  # more than the disk holds

    with pytest.raises(DiskFullError) as err:
        atomic.atomic_folder(out, big)
    text = str(err.value)
    assert "no space left on device" in text and str(out) in text and ".tmp+" not in text
    assert _folder_text(out) == {"complete"} and _temporaries(full_disk) == []
    with pytest.raises(DiskFullError):
        atomic.atomic_file(full_disk / "f.json", lambda tmp: tmp.write_bytes(b"x" * (1 << 20)))
    assert _temporaries(full_disk) == [] and not (full_disk / "f.json").exists()


def test_the_fault_point_is_a_no_op_unless_named(monkeypatch):
    monkeypatch.delenv(atomic.FAULT_ENV, raising=False)
    atomic.fault_point("before-rename")
    monkeypatch.setenv(atomic.FAULT_ENV, "after-rename:2")
    atomic.fault_point("before-rename")
    assert json.dumps(atomic._passes) == "{}"


def test_a_folder_sweep_removes_the_killed_temporaries_of_every_name_for_writers_of_new_names(tmp_path):
    """One file per append (a history): the next append writes another name, so it sweeps the folder."""
    killed = _writer("file", tmp_path / "run-1.parquet", "x", fault="before-rename")
    assert killed.returncode == -signal.SIGKILL and _temporaries(tmp_path)
    live = atomic.temp_name(tmp_path / "run-2.parquet")
    live.write_text("being written")
    removed = atomic.sweep_folder(tmp_path, "run-")
    assert [p.name for p in removed] != [] and _temporaries(tmp_path) == [live.name]
