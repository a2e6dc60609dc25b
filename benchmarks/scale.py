"""Benchmark: every command at scale on dqkit's defaults (no environment variable, no heap flag).

Each workload runs as the CLI would (``python -m dqkit.cli ...``, a fresh JVM), once per ``--rows`` size;
printed per run: seconds, the peak resident memory of the whole process tree (the CLI, its JVM, its
Python workers: polled every 0.5 s), the exit code and the load average before and after. With two or
more sizes, the growth exponent between consecutive sizes, log(t2/t1) / log(n2/n1) (1 is linear).
Not part of ``make test``; ``make bench-scale`` runs the 10M-row matrix.

    PYTHONPATH=. .venv/bin/python benchmarks/scale.py --rows 1000000
    PYTHONPATH=. .venv/bin/python benchmarks/scale.py --rows 1000000,3000000,10000000 --only delta detect-fd-count

Workloads (``--only`` picks some): ``delta`` (0.1 % of the rows changed), ``detect-fd-count`` /
``detect-fd`` (TaxA, 10 % errors, zipcode -> city), ``detect-dc-count`` / ``detect-dc`` (the same table,
the rate/salary denial constraint), ``repair-fd`` / ``repair-dc`` (``--out``), ``query`` (a SELECT
over the table with its FD), ``lake`` (100 tables totalling the rows), ``detect-since`` (night 2 against
night 1's saved detection), ``dedup`` (FEBRL-like people, rows/2 entities), ``dedup-since``; and
``profile`` / ``discover`` when this dqkit has those commands. Data goes to ``benchmarks/data/scale/``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT / "benchmarks" / "data" / "scale"
RESULTS = ROOT / "benchmarks" / "results"

FD = "rules:\n  - name: zip_city\n    rule: \"zipcode -> city\"\n"
DC = "rules:\n  - name: rate_salary\n    rule: \"not(t1.salary > t2.salary and t1.rate < t2.rate)\"\n"
WORKLOADS = ("delta", "detect-fd-count", "detect-fd", "detect-dc-count", "detect-dc", "repair-fd", "repair-dc",
             "query", "lake", "detect-since", "dedup", "dedup-since", "profile", "discover")


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def tree_rss(root: int) -> int:
    """Resident bytes of ``root`` and every process below it."""
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                ppid = int(open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            kids.setdefault(ppid, []).append(int(d))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo += kids.get(pid, [])
        try:
            total += int(open(f"/proc/{pid}/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except OSError:
            pass
    return total


def run_cli(args: list[str]) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("DQKIT_DEDUP_DRIVER_PAIRS", "DQKIT_DRIVER_MEMORY")}
    env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{env.get('PYTHONPATH', '')}"
    before = load()
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "dqkit.cli", *args], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    peak = [0]

    def poll() -> None:
        while proc.poll() is None:
            peak[0] = max(peak[0], tree_rss(proc.pid))
            time.sleep(0.5)
    watcher = threading.Thread(target=poll, daemon=True)
    watcher.start()
    _, err = proc.communicate()
    watcher.join()
    return {"seconds": time.perf_counter() - start, "peak_gb": peak[0] / 1e9, "exit": proc.returncode,
            "load_before": before, "load_after": load(), "error": err[-800:] if proc.returncode == 2 else ""}


def has_command(name: str) -> bool:
    try:
        from dqkit.systems import get

        get(name)
        return True
    except Exception:  # noqa: BLE001 - not in this dqkit
        return False


# ------------------------------------------------------------------------------------------ data
def tax(rows: int, variant: str = "A") -> Path:
    path = DATA / f"tax{variant}_{rows}"
    if not (path / "dirty").exists():
        from data.tax import write_tax

        from dqkit.runtime.session import get_spark

        get_spark()
        write_tax(path.as_posix(), rows, variant=variant, error_rate=0.1 if variant == "A" else 1e-5)
    return path / "dirty"


def night2(rows: int) -> Path:
    """TaxA with 0.1 % of its rows' cities changed (the next night), as one Parquet folder."""
    path = DATA / f"taxA_{rows}_night2"
    if not path.exists():
        from pyspark.sql import functions as F

        from dqkit.runtime.session import get_spark

        spark = get_spark()
        t = spark.read.parquet(tax(rows).as_posix())
        t.withColumn("city", F.when(F.xxhash64("tid") % 1000 == 0, F.lit("changed")).otherwise(F.col("city"))) \
            .write.parquet(path.as_posix())
    return path


def versions(rows: int) -> tuple[Path, Path]:
    base = DATA / f"delta_{rows}"
    if not (base / "new").exists():
        from pyspark.sql import functions as F

        from dqkit.runtime.session import get_spark

        spark = get_spark()
        t = spark.range(rows).select(F.col("id"), (F.xxhash64("id") % 1000).alias("a"), F.rand(1).alias("b"),
                                     F.concat(F.lit("v"), (F.col("id") % 9973).cast("string")).alias("s"),
                                     F.date_add(F.lit("2020-01-01").cast("date"), (F.col("id") % 3650).cast("int"))
                                     .alias("d"))
        t.write.parquet((base / "old" / "t").as_posix())
        t.withColumn("s", F.when(F.col("id") % 1000 == 7, F.lit("changed")).otherwise(F.col("s"))) \
            .write.parquet((base / "new" / "t").as_posix())
    return base / "old", base / "new"


def lake(rows: int) -> Path:
    path = DATA / f"lake_{rows}"
    if not path.exists():
        from data.lake import generate_lake

        generate_lake(path, roots=20, derived=80, rows=max(10, rows // 100), seed=0)
    return path


def people(rows: int, night: int = 1) -> Path:
    path = DATA / f"people_{rows}_n{night}.parquet"
    if not path.exists():
        from data.people import generate_people

        recs = generate_people(max(1, rows // 2), seed=1)[0]
        if night == 2:  # one record in a hundred gets a changed street number
            recs.loc[recs.index % 100 == 3, "street_number"] = "999"
        recs.to_parquet(path, index=False)
    return path


def text_file(name: str, text: str) -> Path:
    DATA.mkdir(parents=True, exist_ok=True)
    (DATA / name).write_text(text)
    return DATA / name


def args_for(name: str, rows: int, scratch: Path) -> list[list[str]] | None:
    """The CLI runs of workload ``name`` (set-up runs first, the timed one last), or None if unavailable."""
    fd, dc = str(text_file("fd.yaml", FD)), str(text_file("dc.yaml", DC))
    dedup_cfg = str(text_file("dedup.yaml", (ROOT / "benchmarks" / "saved_vs_unsaved.py").read_text()
                              .split('DEDUP_CONFIG = """\\\n')[1].split('"""')[0]))
    if name == "delta":
        old, new = versions(rows)
        return [["delta", str(old), str(new), "--key", "t=id"]]
    if name.startswith("detect-") and name != "detect-since":
        rules = fd if "-fd" in name else dc
        return [["detect", str(tax(rows)), "--rules", rules, "--key", "tid",
                 *(["--count-only"] if name.endswith("-count") else ["--out", str(scratch / "o")])]]
    if name == "repair-fd":
        return [["repair", str(tax(rows)), "--rules", fd, "--key", "tid", "--out", str(scratch / "o")]]
    if name == "repair-dc":
        return [["repair", str(tax(rows, "B")), "--rules", dc, "--key", "tid", "--out", str(scratch / "o")]]
    if name == "query":
        return [["query", "SELECT city, count(*) AS n FROM tax WHERE zipcode < '5' GROUP BY city",
                 "--table", f"tax={tax(rows)}", "--rules", f"tax={fd}", "--key", "tax=tid"]]
    if name == "lake":
        return [["lake", str(lake(rows))]]
    if name == "detect-since":
        saved = scratch / "night1"
        return [["detect", str(tax(rows)), "--rules", fd, "--key", "tid", "--out", str(saved)],
                ["detect", str(night2(rows)), "--rules", fd, "--key", "tid", "--since", str(saved)]]
    if name == "dedup":
        return [["dedup", str(people(rows)), "--key", "rec_id", "--config", dedup_cfg, "--out", str(scratch / "o")]]
    if name == "dedup-since":
        saved = scratch / "night1"
        return [["dedup", str(people(rows)), "--key", "rec_id", "--config", dedup_cfg, "--out", str(saved)],
                ["dedup", str(people(rows, 2)), "--key", "rec_id", "--config", dedup_cfg, "--since", str(saved)]]
    if name in ("profile", "discover"):
        return [[name, str(tax(rows))]] if has_command(name) else None
    raise SystemExit(f"unknown workload {name}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", default="1000000", help="comma-separated sizes")
    p.add_argument("--only", nargs="*", default=list(WORKLOADS), choices=WORKLOADS)
    a = p.parse_args(argv)
    sizes = [int(s) for s in a.rows.split(",")]
    results = []
    for name in a.only:
        times: list[tuple[int, float]] = []
        for rows in sizes:
            scratch = Path(tempfile.mkdtemp(prefix="dqkit-scale-"))
            try:
                runs = args_for(name, rows, scratch)
                if runs is None:
                    print(f"{name:16s} not in this dqkit: skipped", flush=True)
                    break
                for setup in runs[:-1]:
                    run_cli(setup)
                got = run_cli(runs[-1])
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
            growth = ""
            if times and got["exit"] != 2:
                n0, t0 = times[-1]
                got["growth"] = math.log(got["seconds"] / t0) / math.log(rows / n0)
                growth = f"  growth {got['growth']:.2f}"
            if got["exit"] != 2:
                times.append((rows, got["seconds"]))
            results.append({"workload": name, "rows": rows, **got, "command": "dqkit " + " ".join(runs[-1])})
            print(f"{name:16s} {rows:>11,}  {got['seconds']:8.1f} s  peak {got['peak_gb']:5.2f} GB  exit {got['exit']}"
                  f"{growth}  load {got['load_before']} -> {got['load_after']}  {got['error'][-300:]}", flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "scale.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
