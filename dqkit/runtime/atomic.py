"""Atomic outputs, written once: a file or a folder is written beside its target under a hidden
temporary name and renamed onto it, so a failed, cancelled or killed run leaves the target as it was
(absent, or the previous complete output) and nothing half-written is ever visible under its name.

Faults it survives (docs/reliability.md, "Faults"):

* **A kill at any moment.** Every temporary entry is named for its owner:
  ``.NAME.KIND+HOST+PID+START+RANDOM`` beside the target ``NAME`` (KIND: ``tmp`` a write in progress,
  ``old`` a previous output being swapped out, ``ckpt`` checkpoints), where START is the owner's start
  time (``/proc/PID/stat``), so a reused PID is not mistaken for the owner. The next write of the same
  target (and every ``--out`` check) removes the temporaries whose owner is gone (``sweep``): a live
  owner's, or another machine's, are never touched. A multi-file commit journals its renames first
  (``COMMIT.json`` in its temporary folder), so a kill between two renames is finished by the next run.
* **Two runs at once.** The commit itself runs under an exclusive ``flock`` of the target's folder and
  renames without replacing (``renameat2(RENAME_NOREPLACE)``, ``link`` for files): of two runs writing
  a fresh target without ``overwrite``, one wins whole and the other gets ``OutputTakenError`` (exit 2).
  With ``overwrite`` the swap is one ``renameat2(RENAME_EXCHANGE)`` where the file system has it.
* **A full disk.** ENOSPC while writing (from Python or from a Spark task) becomes ``DiskFullError``
  naming the target, never the temporary path; the temporary is removed.

``DQKIT_FAULT_POINT=NAME[:N]`` makes the process SIGKILL itself at the N-th (default first) pass of the
named point (``start-write``, ``mid-write``, ``before-rename``, ``mid-commit``, ``after-rename``):
the fault tests kill each command exactly before, during and after the commit of its output.
``DQKIT_FAULT_LOG=FILE`` appends each point passed to FILE (a run's recorded timeline of writes).
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import signal
import socket
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from dqkit.errors import DiskFullError, OutputTakenError

FAULT_ENV = "DQKIT_FAULT_POINT"
FAULT_LOG_ENV = "DQKIT_FAULT_LOG"
JOURNAL = "COMMIT.json"
_KINDS = ("tmp", "old", "ckpt")
_NAME = re.compile(r"^\.(?P<name>.+)\.(?P<kind>tmp|old|ckpt)\+(?P<host>[^+]+)\+(?P<pid>\d+)\+(?P<start>\d+)"
                   r"\+[0-9a-f]+$")


# ------------------------------------------------------------------------------------------ owners
def _start_ticks(pid: int) -> str:
    """The start time of process ``pid`` in clock ticks since boot ("0" where /proc cannot tell)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return "0"


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "-", socket.gethostname() or "host")[:40] or "host"


class Owner(NamedTuple):
    """Who made a temporary entry: machine, process id and its start time."""

    host: str
    pid: int
    start: str


def me() -> Owner:
    """This process as the owner of the temporaries it makes."""
    return Owner(_host(), os.getpid(), _start_ticks(os.getpid()))


def owner_alive(owner: Owner) -> bool:
    """False only when the owner is known to be gone: same machine, and no process with its PID and
    start time. Another machine's owner is taken as alive (its processes cannot be seen from here)."""
    if owner.host != _host():
        return True
    try:
        os.kill(owner.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    now = _start_ticks(owner.pid)
    return owner.start == "0" or now == "0" or now == owner.start


def temp_name(target: str | os.PathLike, kind: str = "tmp") -> Path:
    """A fresh temporary sibling of ``target``, named for this process (see the module docstring)."""
    if kind not in _KINDS:
        raise ValueError(kind)
    target = Path(target)
    o = me()
    return target.with_name(f".{target.name}.{kind}+{o.host}+{o.pid}+{o.start}+{uuid.uuid4().hex[:8]}")


def parse_temp(name: str) -> tuple[str, str, Owner] | None:
    """(target name, kind, owner) of a temporary entry's name; None for any other name."""
    m = _NAME.match(name)
    if m is None:
        return None
    return m["name"], m["kind"], Owner(m["host"], int(m["pid"]), m["start"])


# ------------------------------------------------------------------------------------------ faults
_passes: dict[str, int] = {}


def fault_point(name: str) -> None:
    """SIGKILL this process here when ``DQKIT_FAULT_POINT`` names this point (``NAME`` or ``NAME:N``
    for its N-th pass); a no-op otherwise. Used by the fault tests only."""
    log = os.environ.get(FAULT_LOG_ENV)
    if log:  # the recorded timeline of a run's writes: the points it passed, in order
        with open(log, "a", encoding="utf-8") as f:
            f.write(name + "\n")
    wanted = os.environ.get(FAULT_ENV)
    if not wanted:
        return
    point, _, nth = wanted.partition(":")
    if point != name:
        return
    _passes[name] = _passes.get(name, 0) + 1
    if _passes[name] == int(nth or 1):
        os.kill(os.getpid(), signal.SIGKILL)


# ------------------------------------------------------------------------------------------ locking
@contextlib.contextmanager
def folder_lock(folder: str | os.PathLike) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``folder`` (the kernel drops it when the holder dies, so it never
    goes stale). Commits and sweeps of entries in one folder take it; it is held for milliseconds.
    Where the platform or file system has no such lock the block runs unlocked (renames stay atomic)."""
    try:
        import fcntl
        fd = os.open(os.fspath(folder), os.O_RDONLY)
    except (ImportError, OSError):
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            pass
        yield
    finally:
        os.close(fd)


_NOREPLACE, _EXCHANGE = 1, 2


def _renameat2(src: Path, dst: Path, flags: int) -> bool:
    """``renameat2(src, dst, flags)`` (Linux); False where the C library or file system lacks it."""
    import ctypes

    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_cwd = -100
    if fn(at_cwd, os.fsencode(src), at_cwd, os.fsencode(dst), flags) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), os.fspath(dst))


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


# ------------------------------------------------------------------------------------------ sweep
def sweep_folder(folder: str | os.PathLike, prefix: str = "") -> list[Path]:
    """``sweep`` every target in ``folder`` whose name starts with ``prefix``: for writers that make a new
    name each time (one file per history append), whose next run never writes a killed run's name."""
    names = set()
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            parsed = parse_temp(entry.name)
            if parsed is not None and parsed[0].startswith(prefix):
                names.add(parsed[0])
    return [p for name in sorted(names) for p in sweep(Path(folder) / name)]


def sweep(target: str | os.PathLike) -> list[Path]:
    """Remove the stale temporaries of ``target`` (their owner is gone); returns what it removed.

    A stale ``old`` entry while ``target`` is missing is the previous output of a swap killed half-way:
    it is renamed back. A stale temporary folder holding a commit journal is a commit killed between
    its renames: the renames are finished. Safe while another run writes the same target (its
    temporaries have a live owner) and between two sweeps (they take the folder's lock)."""
    target = Path(os.path.abspath(os.path.expanduser(os.fspath(target))))
    parent = target.parent
    if not parent.is_dir():
        return []
    removed: list[Path] = []
    with folder_lock(parent):
        try:
            entries = list(os.scandir(parent))
        except OSError:
            return []
        for entry in entries:
            parsed = parse_temp(entry.name)
            if parsed is None or parsed[0] != target.name or owner_alive(parsed[2]):
                continue
            path = Path(entry.path)
            if parsed[1] == "old":
                if not os.path.lexists(target):
                    with contextlib.suppress(OSError):
                        os.rename(path, target)  # the previous output back, as it was
                        continue
                    continue  # could not put it back: keep it rather than lose the only copy
            if parsed[1] == "tmp" and (path / JOURNAL).is_file():
                _finish_commit(path)
            _remove(path)
            removed.append(path)
    return removed


# ------------------------------------------------------------------------------------------ disk full
def is_disk_full(exc: BaseException) -> bool:
    """True for ENOSPC, raised by Python or reported by a Spark task ("No space left on device")."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno == errno.ENOSPC:
            return True
        # PySpark's captured JVM errors keep the JVM's causes and stack trace beside their message
        texts = (str(e), str(getattr(e, "_stackTrace", "") or ""), str(getattr(e, "java_exception", "") or ""))
        if any("No space left on device" in t for t in texts):
            return True
        todo += [e.__cause__, e.__context__, getattr(e, "_cause", None)]
    return False


def disk_full(target: str | os.PathLike) -> DiskFullError:
    """The error of a write to ``target`` that ran out of space (names the target, not the temporary)."""
    return DiskFullError(f"no space left on device while writing {target}; nothing was written there",
                         hint="free space on that disk (or choose another place), then rerun")


# ------------------------------------------------------------------------------------------ writers
def atomic_file(target: str | os.PathLike, write: Callable[[Path], None], *, overwrite: bool = True,
                guard: Callable[[Path], None] | None = None) -> Path:
    """Run ``write(tmp)`` to make a sibling temporary file, then rename it onto ``target``.

    Without ``overwrite`` an existing target (made meanwhile by another run) is kept and
    ``OutputTakenError`` raised. ``guard(target)``, called under the folder lock just before the rename,
    may refuse the commit by raising (a read-modify-write checks nobody else wrote meanwhile)."""
    target = Path(target)
    sweep(target)
    tmp = temp_name(target)
    try:
        fault_point("start-write")
        write(tmp)
        fault_point("mid-write")
        with folder_lock(target.parent):
            if guard is not None:
                guard(target)
            fault_point("before-rename")
            if overwrite:
                os.replace(tmp, target)
            else:
                try:
                    os.link(tmp, target)
                except FileExistsError:
                    raise _taken(target) from None
            fault_point("after-rename")
    except Exception as exc:
        if is_disk_full(exc):
            raise disk_full(target) from None
        raise
    finally:
        tmp.unlink(missing_ok=True)
    return target


def update_file(target: str | os.PathLike, change: Callable[[str | None], str]) -> Path:
    """Replace the text of ``target`` by ``change(current text or None)``, atomically and serialised
    with every other update of it: two runs appending to one file both land (e.g. a history)."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    sweep(target)
    tmp = temp_name(target)
    try:
        with folder_lock(target.parent):
            old = target.read_text(encoding="utf-8") if target.exists() else None
            tmp.write_text(change(old), encoding="utf-8")
            fault_point("before-rename")
            os.replace(tmp, target)
            fault_point("after-rename")
    except Exception as exc:
        if is_disk_full(exc):
            raise disk_full(target) from None
        raise
    finally:
        tmp.unlink(missing_ok=True)
    return target


#: temporary folders of writes cancelled by Ctrl-C / SIGTERM (see ``remove_abandoned``)
ABANDONED: set[Path] = set()


def remove_abandoned() -> None:
    """Remove the temporary folders of cancelled writes; call it once their Spark jobs can no longer run."""
    while ABANDONED:
        shutil.rmtree(ABANDONED.pop(), ignore_errors=True)


def _taken(target: Path) -> OutputTakenError:
    return OutputTakenError(f"the output {target} was written by another run while this one ran; "
                            "this run's result was not saved",
                            hint="rerun with another --out, or pass --overwrite to replace it")


def atomic_folder(target: str | os.PathLike, write: Callable[[Path], None], *, overwrite: bool = True,
                  guard: Callable[[Path], None] | None = None) -> Path:
    """Run ``write(tmp)`` into a fresh sibling folder, then rename it onto ``target``.

    A failure or kill leaves ``target`` as it was (absent or the previous complete output); a failure
    removes the temporary folder, a kill leaves it to the next run's ``sweep``. Without ``overwrite``
    a target that appeared meanwhile (another run) is kept and ``OutputTakenError`` raised; ``guard``
    as for ``atomic_file``."""
    target = Path(target).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    sweep(target)
    tmp = temp_name(target)
    try:
        tmp.mkdir()
        fault_point("start-write")
        write(tmp)
        _commit_folder(tmp, target, overwrite, guard)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, KeyboardInterrupt):
            # a cancelled Spark write can still create folders under tmp; remove_abandoned() ends that
            ABANDONED.add(tmp)
        if isinstance(exc, Exception) and is_disk_full(exc):
            raise disk_full(target) from None
        raise
    return target


def _commit_folder(tmp: Path, target: Path, overwrite: bool, guard: Callable[[Path], None] | None) -> None:
    with folder_lock(target.parent):
        if guard is not None:
            guard(target)
        fault_point("before-rename")
        if not os.path.lexists(target):
            if not _renameat2(tmp, target, _NOREPLACE):
                if os.path.lexists(target):  # pragma: no cover - only without renameat2 and the lock
                    raise _taken(target)
                os.rename(tmp, target)
            fault_point("after-rename")
            return
        if not overwrite:
            raise _taken(target)
        if _renameat2(tmp, target, _EXCHANGE):  # one step: the previous output is now under tmp
            fault_point("after-rename")
            shutil.rmtree(tmp, ignore_errors=True)
            return
        old = temp_name(target, "old")
        os.replace(target, old)
        fault_point("mid-commit")  # a sweep renames the old output back
        os.replace(tmp, target)
        fault_point("after-rename")
        _remove(old)


def commit_files(staging: Path, moves: Sequence[tuple[Path, Path]], *, overwrite: bool) -> None:
    """Rename each staged file onto its target, all in one folder, as one commit: the renames are
    journaled first in ``staging/COMMIT.json`` so a kill between two of them is finished by the next
    ``sweep`` of the first target. Without ``overwrite`` an existing target refuses the whole commit
    (``OutputTakenError``, nothing renamed). ``staging`` is a ``temp_name`` of the first target and is
    removed after."""
    parent = moves[0][1].parent
    with folder_lock(parent):
        if not overwrite:
            for _, out in moves:
                if os.path.lexists(out):
                    raise _taken(out)
        fault_point("before-rename")  # no journal yet: a kill here leaves every target as it was
        journal = [[os.path.relpath(src, staging), str(out)] for src, out in moves]
        (staging / JOURNAL).write_text(json.dumps(journal), encoding="utf-8")
        for i, (src, out) in enumerate(moves):
            os.replace(src, out)
            if i == 0:
                fault_point("mid-commit")
        fault_point("after-rename")
    shutil.rmtree(staging, ignore_errors=True)


def atomic_files(writes: Mapping[Path, Callable[[Path], None]], *, overwrite: bool = True) -> list[Path]:
    """Write several files of one folder as one commit: ``write(staged)`` per target into a temporary
    folder beside the first, then ``commit_files``. A failure leaves every target as it was; a kill
    leaves them as they were, or (once the next sweep finishes a journaled commit) all new."""
    targets = [Path(t) for t in writes]
    for t in targets:
        sweep(t)
    staging = temp_name(targets[0])
    try:
        staging.mkdir()
        fault_point("start-write")
        moves = []
        for i, (target, write) in enumerate(writes.items()):
            staged = staging / f"{i}{Path(target).suffix}"
            write(staged)
            fault_point("mid-write")
            moves.append((staged, Path(target)))
        commit_files(staging, moves, overwrite=overwrite)
    except Exception as exc:
        if is_disk_full(exc):
            raise disk_full(targets[0]) from None
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return targets


def _finish_commit(staging: Path) -> None:
    """Finish the renames journaled in a killed commit (those already done are gone from staging)."""
    try:
        moves = json.loads((staging / JOURNAL).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    for rel, out in moves:
        src = staging / rel
        if src.exists():
            with contextlib.suppress(OSError):
                os.replace(src, out)
