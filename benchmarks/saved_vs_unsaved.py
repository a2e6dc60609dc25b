"""Benchmark: each command with and without ``--out`` (goal: a saved run costs at most 1.2x an unsaved one).

Every command runs as the CLI would (``python -m dqkit.cli ...``, a fresh JVM each time), unsaved and
saved alternately (``--repeat`` rounds, the order swapped each round), and prints per command and size
the median seconds of each, the ratio saved / unsaved, the files written per saved table and the load
average before and after (the machine may be shared). Not part of ``make test``.

    PYTHONPATH=. .venv/bin/python benchmarks/saved_vs_unsaved.py                       # small sizes
    PYTHONPATH=. .venv/bin/python benchmarks/saved_vs_unsaved.py --commands dedup --dedup-entities 100000
    PYTHONPATH=. .venv/bin/python benchmarks/saved_vs_unsaved.py --in-process --dedup-entities 20000  # CPU s too

Data is generated once into ``benchmarks/data/saved_vs_unsaved/`` (gitignored): FEBRL-like people
(``data/people.py``) for dedup, TaxA (``data/tax.py``, 10 % errors) for detect and repair with the FD
zipcode -> city, and two versions of a 5-column table (0.1 % of the rows changed) for delta.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT / "benchmarks" / "data" / "saved_vs_unsaved"
RESULTS = ROOT / "benchmarks" / "results"

DEDUP_CONFIG = """\
blocking: [["surname", "given_name"], ["postcode"], ["date_of_birth"], ["soc_sec_id"]]
comparisons:
  - {column: given_name, method: jaro_winkler}
  - {column: surname, method: jaro_winkler}
  - {column: date_of_birth, method: levenshtein}
  - {column: soc_sec_id, method: levenshtein}
  - {column: street_number, method: exact}
  - {column: postcode, method: exact}
threshold: 0.9
"""
FD_RULES = "rules:\n  - name: zip_city\n    rule: \"zipcode -> city\"\n"


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def people(entities: int) -> tuple[Path, Path]:
    path, config = DATA / f"people_{entities}.csv", DATA / "dedup.yaml"
    if not path.exists():
        from data.people import generate_people

        DATA.mkdir(parents=True, exist_ok=True)
        generate_people(entities, seed=1)[0].to_csv(path, index=False)
    config.write_text(DEDUP_CONFIG)
    return path, config


def tax(rows: int) -> tuple[Path, Path]:
    path, rules = DATA / f"taxA_{rows}", DATA / "fd.yaml"
    if not (path / "dirty").exists():
        from data.tax import write_tax

        from dqkit.runtime.session import get_spark

        get_spark()
        write_tax(path.as_posix(), rows, variant="A", error_rate=0.1)
    rules.write_text(FD_RULES)
    return path / "dirty", rules


def versions(rows: int) -> tuple[Path, Path]:
    old, new = DATA / f"delta_{rows}" / "old" / "t.parquet", DATA / f"delta_{rows}" / "new" / "t.parquet"
    if not new.exists():
        import numpy as np
        import pandas as pd

        old.parent.mkdir(parents=True, exist_ok=True)
        new.parent.mkdir(parents=True, exist_ok=True)
        rng = np.random.default_rng(1)
        df = pd.DataFrame({"id": np.arange(rows, dtype=np.int64), "a": rng.integers(0, 1000, rows),
                           "b": rng.random(rows), "s": [f"v{i % 9973}" for i in range(rows)],
                           "d": pd.to_datetime("2020-01-01") + pd.to_timedelta(rng.integers(0, 3650, rows), "D")})
        df.to_parquet(old, index=False)
        changed = rng.choice(rows, max(1, rows // 1000), replace=False)
        df.loc[changed, "s"] = "changed"
        df.to_parquet(new, index=False)
    return old, new


def command(name: str, size: int) -> list[str]:
    if name == "dedup":
        path, config = people(size)
        return ["dedup", str(path), "--key", "rec_id", "--config", str(config)]
    if name in ("detect", "repair"):
        path, rules = tax(size)
        return [name, str(path), "--rules", str(rules), "--key", "tid"]
    if name == "delta":
        old, new = versions(size)
        return ["delta", str(old.parent), str(new.parent), "--key", "t=id"]
    raise SystemExit(f"unknown command {name}")


def run_once(args: list[str], out: Path | None) -> float:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    cmd = [sys.executable, "-m", "dqkit.cli", *args, *(["--out", str(out)] if out else [])]
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    secs = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return secs


def files_per_table(folder: Path) -> dict[str, int]:
    return {p.name: sum(1 for f in p.rglob("part-*")) for p in sorted(folder.iterdir()) if p.is_dir()}


def measure(name: str, size: int, repeat: int) -> dict:
    args = command(name, size)
    before = load()
    plain, saved, files = [], [], {}
    scratch = Path(tempfile.mkdtemp(prefix="dqkit-saved-"))
    try:
        for i in range(repeat):
            for save in ((False, True) if i % 2 == 0 else (True, False)):
                out = scratch / f"out{i}" if save else None
                (saved if save else plain).append(run_once(args, out))
                print(f"  {name} {size:,} round {i} {'saved' if save else 'unsaved'}: "
                      f"{(saved if save else plain)[-1]:.1f} s, load {load()}", flush=True)
                if out is not None:
                    files = files_per_table(out)
                    shutil.rmtree(out, ignore_errors=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    row = {"command": name, "size": size, "unsaved_s": plain, "saved_s": saved,
           "ratio": statistics.median(saved) / statistics.median(plain), "files": files,
           "load_before": before, "load_after": load(), "command_line": "dqkit " + " ".join(args) + " [--out DIR]"}
    print(f"{name:7s} {size:>9,}  unsaved {statistics.median(plain):7.1f} s  saved {statistics.median(saved):7.1f} s  "
          f"saved/unsaved {row['ratio']:.2f}x  files {json.dumps(files)}  load {before} -> {row['load_after']}",
          flush=True)
    return row


def in_process(entities: int, rounds: int) -> list[dict]:
    """Dedup in one session: ``dedup`` + ``to_text`` (unsaved) against ``dedup`` + ``save`` + ``to_text``
    (saved), alternately, wall and CPU seconds (the JVM's and this process's, from /proc): on a loaded
    machine the CPU seconds are the comparable part, and no JVM start is timed."""
    from dqkit.dedup import dedup
    from dqkit.runtime.session import get_spark

    spark = get_spark()
    jvm = spark._jvm.java.lang.ProcessHandle.current().pid()
    tick = os.sysconf("SC_CLK_TCK")

    def cpu() -> float:
        total = 0
        for pid in (jvm, os.getpid()):
            f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            total += sum(int(x) for x in f[11:15])
        return total / tick

    path, config = people(entities)
    rows = []
    scratch = Path(tempfile.mkdtemp(prefix="dqkit-saved-"))
    try:
        for i in range(rounds):
            for save in (False, True):
                start, used, before = time.perf_counter(), cpu(), load()
                result = dedup(str(path), "rec_id", str(config), spark=spark)
                files = {}
                if save:
                    out = scratch / f"out{i}"
                    result.save(out)
                    files = files_per_table(out)
                result.to_text()
                row = {"round": i, "saved": save, "seconds": time.perf_counter() - start, "cpu_s": cpu() - used,
                       "files": files, "load_before": before, "load_after": load()}
                rows.append(row)
                print(f"  dedup {entities:,} in one session, round {i} {'saved' if save else 'unsaved'}: "
                      f"{row['seconds']:.1f} s, CPU {row['cpu_s']:.1f} s, files {json.dumps(files)}, "
                      f"load {before} -> {row['load_after']}", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--commands", default="dedup,detect,repair,delta")
    p.add_argument("--dedup-entities", default="20000", help="comma-separated generator sizes (records ~2x)")
    p.add_argument("--rows", default="200000", help="comma-separated row counts for detect, repair and delta")
    p.add_argument("--repeat", type=int, default=2, help="rounds; each runs the command unsaved and saved")
    p.add_argument("--in-process", action="store_true",
                   help="dedup only, in one session (no JVM start timed), wall and CPU seconds")
    args = p.parse_args(argv)
    if args.in_process:
        got = [in_process(int(n), args.repeat) for n in args.dedup_entities.split(",")]
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "saved_vs_unsaved_in_process.json").write_text(json.dumps(got, indent=1))
        return 0
    rows = []
    for name in args.commands.split(","):
        sizes = args.dedup_entities if name == "dedup" else args.rows
        for size in (int(s) for s in sizes.split(",")):
            rows.append(measure(name, size, args.repeat))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "saved_vs_unsaved.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
