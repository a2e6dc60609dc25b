"""``make faults``: every writing command SIGKILLed at random moments (not part of ``make test``).

For each command of ``tests/test_faults.py``'s CASES: one run without a kill records its timeline of
writes and its duration T; then ``--kills`` runs are each SIGKILLed (the whole process group: the CLI,
its JVM, a report kernel) after a random delay in [0, 1.1 T] (``--seed``, printed; T shrinks to the
shortest run that finished before its kill, so the kills stay inside warm runs). After every kill each
output must be as it was before that run or complete, and the inputs unchanged; the next run (the next
kill's, then a final one without a kill) must need no cleanup: the final run exits as expected and leaves
no temporary entry. Prints one line per kill and a summary table; exits 1 if any promise broke.

    python tests/support/faults_random.py [--kills 20] [--seed S] [--backend connect|local] [--only NAME ...]
"""
from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]  # tests/ (the cases) and tests/support/ (the harness)

import test_faults as tf  # noqa: E402  (the cases, the checks)
from dqkit.runtime import atomic  # noqa: E402


def _run(backend: list[str], argv: list[str], log: Path | None = None) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", atomic.FAULT_ENV, atomic.FAULT_LOG_ENV)}
    env["PYTHONPATH"] = str(tf.ROOT)
    if log is not None:
        env[atomic.FAULT_LOG_ENV] = str(log)
    return subprocess.Popen([sys.executable, "-m", "dqkit.cli", *backend, *argv], env=env, cwd=tf.ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _state(outputs: dict[Path, str], before: dict[Path, dict | None]) -> str:
    states = set()
    for path, kind in outputs.items():
        now = tf._tree(path) if path.exists() else None
        if now == before[path]:
            states.add("as-was")
        elif path.exists() and _safe_complete(path, kind):
            states.add("complete")
        else:
            states.add("PARTIAL")
    return "PARTIAL" if "PARTIAL" in states else "+".join(sorted(states))


def _safe_complete(path: Path, kind: str) -> bool:
    try:
        return tf._complete(path, kind)
    except (OSError, ValueError):
        return False


def run_case(name: str, backend: list[str], kills: int, rng: random.Random, root: Path) -> dict:
    case = tf.CASES[name]
    work = root / "work"
    out = root / name
    out.mkdir()
    for setup in case.setup:
        p = _run(backend, tf._argv(setup, work, out))
        p.communicate(timeout=1200)
    argv = tf._argv(case.argv, work, out) + (["--overwrite"] if case.overwrite else [])
    outputs = {out / rel: kind for rel, kind in case.outputs.items()}
    inputs = tf._inputs(work)
    log = root / f"{name}.timeline"
    t0 = time.monotonic()
    ref = _run(backend, argv, log)
    _, err = ref.communicate(timeout=1200)
    duration = time.monotonic() - t0
    if ref.returncode not in case.code:
        raise SystemExit(f"{name}: the run without a kill failed ({ref.returncode}): {err[-2000:]}")
    points = log.read_text().split()
    tally = {"command": name, "T": round(duration, 1), "kills": 0, "died": 0, "as-was": 0, "complete": 0,
             "partial": 0, "temporaries_after_kill": 0, "inputs_changed": 0, "timeline": " ".join(points)}
    for i in range(kills):
        before = {p: tf._tree(p) if p.exists() else None for p in outputs}
        delay = rng.uniform(0, 1.1 * duration)
        proc = _run(backend, argv)
        how, started = "finished first", time.monotonic()
        try:
            proc.wait(timeout=delay)
            duration = min(duration, time.monotonic() - started)  # a warm run is shorter: aim within it
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            tally["died"] += 1
            how = "killed"
        proc.wait()
        tally["kills"] += 1
        state = _state(outputs, before)
        for s in state.split("+"):
            tally[s.lower() if s != "PARTIAL" else "partial"] += 1
        left = sum(len(tf._temporaries(p)) for p in outputs)
        tally["temporaries_after_kill"] += left > 0
        changed = tf._inputs(work) != inputs
        tally["inputs_changed"] += changed
        print(f"  {name} kill {i + 1}/{kills}: {how} at {delay:5.1f} s of {duration:5.1f} -> {state}; "
              f"{left} temporar{'y' if left == 1 else 'ies'} left{'; INPUT CHANGED' if changed else ''}", flush=True)
    final = _run(backend, argv)
    _, err = final.communicate(timeout=1200)
    tally["final_exit"] = final.returncode
    tally["final_ok"] = (final.returncode in case.code and all(_safe_complete(p, k) for p, k in outputs.items())
                         and not any(tf._temporaries(p) for p in outputs))
    if not tally["final_ok"]:
        print(f"  {name}: the final run: exit {final.returncode}: {err[-1500:]}", flush=True)
    return tally


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--backend", choices=("connect", "local"), default="connect")
    ap.add_argument("--only", nargs="*", default=None)
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 30)
    print(f"make faults: seed {seed}, {args.kills} kills per command, backend {args.backend}, "
          f"load {os.getloadavg()}", flush=True)
    rng = random.Random(seed)
    root = Path(tempfile.mkdtemp(prefix="dqkit-faults-"))
    (root / "work").mkdir()
    tf.make_work(root / "work")
    cluster = None
    backend: list[str] = []
    if args.backend == "connect":
        from cluster import Cluster

        cluster = Cluster()
        backend = ["--remote", cluster.connect("faults")]
    rows = []
    try:
        for name in args.only or sorted(tf.CASES):
            rows.append(run_case(name, backend, args.kills, rng, root))
    finally:
        if cluster is not None:
            cluster.stop()
    cols = ["command", "T", "kills", "died", "as-was", "complete", "partial", "temporaries_after_kill",
            "inputs_changed", "final_ok"]
    print("\n| " + " | ".join(cols) + " |\n|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(str(r[c]) for c in cols) + " |")
    print(f"\nseed {seed}; load {os.getloadavg()}")
    bad = [r for r in rows if r["partial"] or r["inputs_changed"] or not r["final_ok"]]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
