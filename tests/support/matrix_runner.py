"""Every dqkit command on its small bundled example, in one interpreter, against one Spark backend.

``python tests/support/matrix_runner.py INPUTS OUT [--master URL | --remote URL]`` runs ``dqkit.cli.main`` in-process
for each command (one JVM start per backend, not one per command) and prints one JSON document:
``{command: {"exit": code, "json": parsed stdout or null, "seconds": wall time, "err": stderr tail,
"checkpoints": folders of reliable checkpoints it created}}``.
``prepare(INPUTS)`` writes the inputs; the matrix test calls it once, so every backend reads the same files.
``report`` runs first: its notebook kernel starts its own Spark application, and on a standalone
cluster that application needs the cores a later command's session would hold.
"""
from __future__ import annotations

import contextlib
import io
import json
import sqlite3
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data"

PEOPLE_CONFIG = """\
blocking: [[surname], [postcode, "substr(given_name,1,1)"], [state]]
comparisons:
  - {column: given_name, method: jaro_winkler}
  - {column: surname, method: jaro_winkler}
  - {column: date_of_birth, method: levenshtein}
  - {column: postcode, method: exact}
  - {column: address_1, method: token_set}
  - {column: suburb, method: jaccard}
max_block_size: 12
u_sample_records: 60
"""
CITIES = [("t1", 9001, "Los Angeles"), ("t2", 9001, "San Francisco"), ("t3", 9001, "Los Angeles"),
          ("t4", 10001, "San Francisco"), ("t5", 10001, "New York")]


def prepare(inputs: Path) -> None:
    """Write the small inputs every backend reads (deterministic, a few hundred rows at most)."""
    import pandas as pd
    import yaml

    sys.path.insert(0, str(REPO))
    from data.people import generate_people

    inputs.mkdir(parents=True, exist_ok=True)
    records, _ = generate_people(200, seed=7)
    records.to_csv(inputs / "people.csv", index=False)
    (inputs / "people.yaml").write_text(PEOPLE_CONFIG)
    # TCFC: 300 enrolment rows in Parquet (Spark engine) against a SQLite copy missing one student
    rows = [(f"HEI{i % 3}", f"{9 + i % 2:02d}/{10 + i % 2}", f"{1 + i % 4}", f"s{i}") for i in range(300)]
    cols = ["HEI_id", "acdmYear", "yearOfStudy", "student_id"]
    pd.DataFrame(rows, columns=cols).to_parquet(inputs / "enroll.parquet", index=False)
    db = inputs / "enroll.db"
    db.unlink(missing_ok=True)
    with contextlib.closing(sqlite3.connect(db)) as c:
        c.execute("CREATE TABLE enroll (HEI_id text, acdmYear text, yearOfStudy text, student_id text)")
        c.executemany("INSERT INTO enroll VALUES (?,?,?,?)", rows[:17] + rows[18:])
        c.commit()
    levels = [cols[:1], cols[:2], cols[:3], cols]
    (inputs / "tcfc.yaml").write_text(yaml.safe_dump({"pairs": [{
        "name": "enroll", "source": str(inputs / "enroll.parquet"),
        "target": {"url": f"sqlite:///{db.as_posix()}", "table": "enroll"},
        "aggregates": [["count", "*", "cnt"]], "levels": levels}]}))
    lake = inputs / "lake"
    lake.mkdir(exist_ok=True)
    (lake / "big.csv").write_text("a,b\n1,x\n2,y\n3,\n")
    (lake / "small.csv").write_text("b,a\n,3\nx,1\n")
    (lake / "other.csv").write_text("c\n7\n8\n")
    (inputs / "cities.csv").write_text("tid,Zip,City\n" + "\n".join(f"{t},{z},{c}" for t, z, c in CITIES) + "\n")
    (inputs / "cities_rules.txt").write_text("Zip -> City\n")


def commands(inputs: Path, out: Path) -> dict[str, list[str]]:
    """The CLI arguments of every command (report first; see the module docstring)."""
    users = DATA / "users"
    table1, rules1 = str(DATA / "bigdansing_table1.csv"), str(DATA / "bigdansing_table1_rules.yaml")
    return {
        "report delta": ["report", "delta", "-p", "old", f"{users}/old", "-p", "new", f"{users}/new", "-p", "key",
                         "users=id", "-p", "output", str(out / "report_saved"), "-o", str(out / "report")],
        "delta": ["delta", f"{users}/old", f"{users}/new", "--key", "users=id", "--format", "json",
                  "--out", str(out / "delta")],
        "detect": ["detect", table1, "--rules", rules1, "--key", "tid", "--format", "json"],
        "repair": ["repair", table1, "--rules", rules1, "--key", "tid", "--format", "json", "--out", str(out / "repair")],
        "dedup": ["dedup", str(inputs / "people.csv"), "--key", "rec_id", "--config", str(inputs / "people.yaml"),
                  "--format", "json"],
        "tcfc": ["tcfc", "--spec", str(inputs / "tcfc.yaml"), "--format", "json"],
        "lake": ["lake", str(inputs / "lake"), "--verify", "--plan", "--format", "json"],
        "query": ["query", "--table", f"cities={inputs / 'cities.csv'}", "--rules", f"cities={inputs / 'cities_rules.txt'}",
                  "--key", "cities=tid", "--cost-units", "tuples", "--format", "json",
                  "SELECT City FROM cities WHERE Zip = 10001"],
    }


def _report_json(out: Path) -> dict:
    """What the report produced: the saved delta summary and the Spark master its notebook ran on."""
    import re

    summary = out / "report_saved" / "summary.json"
    html = out / "report" / "delta_report.html"
    master = None
    if html.exists():
        m = re.search(r"Spark master</t[hd]>\s*<td[^>]*>([^<]*)<", html.read_text(errors="replace"))
        master = m.group(1).strip() if m else None
    return {"summary": json.loads(summary.read_text()) if summary.exists() else None, "spark_master": master}


def run(inputs: Path, out: Path, backend: list[str], only: list[str] | None = None,
        skip: list[str] | None = None) -> dict:
    """Run each command (``only`` these, none of ``skip``) through ``dqkit.cli.main`` with ``backend``
    flags; collect exit code, JSON, time."""
    from dqkit.runtime import checkpoints
    from dqkit.cli import main

    results = {}
    for name, argv in commands(inputs, out).items():
        if (only and name not in only) or (skip and name in skip):
            continue
        stdout, stderr = io.StringIO(), io.StringIO()
        made = len(checkpoints.history)
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code = main([*backend, *argv])
        seconds = round(time.perf_counter() - t0, 2)
        text = stdout.getvalue()
        try:
            payload = _report_json(out) if name == "report delta" else json.loads(text)
        except ValueError:
            payload = None
        results[name] = {"exit": code, "json": payload, "seconds": seconds, "err": stderr.getvalue()[-1500:],
                         "checkpoints": checkpoints.history[made:]}  # folders of reliable checkpoints it made
    return results


if __name__ == "__main__":
    inputs_dir, out_dir, *flags = sys.argv[1:]
    chosen = {}
    for option in ("--only", "--skip"):
        if option in flags:
            i = flags.index(option)
            chosen[option[2:]], flags = flags[i + 1].split(","), flags[:i] + flags[i + 2:]
    t = time.perf_counter()
    res = run(Path(inputs_dir), Path(out_dir), flags, **chosen)
    print(json.dumps({"results": res, "seconds": round(time.perf_counter() - t, 2)}, default=str))


def _is_timing(key: str) -> bool:
    k = key.lower()
    return ("seconds" in k or k.endswith("_s") or k.endswith("_time") or k in ("time", "elapsed", "duration")) \
        and k not in ("budget_s", "grace_s")  # TCFC's parameters, not measurements


def comparable(payload, out: str | None = None):
    """``payload`` without timings (keys naming seconds or times, e.g. ``seconds``, ``scan_seconds``,
    ``cost`` measured in seconds) and with the run's output folder replaced by ``OUT``."""
    if isinstance(payload, dict):
        return {k: comparable(v, out) for k, v in payload.items() if not _is_timing(k)}
    if isinstance(payload, list):
        return [comparable(v, out) for v in payload]
    if isinstance(payload, str) and out:
        return payload.replace(out, "OUT")
    return payload


def differences(a, b, path: str = "") -> list[str]:
    """Where two JSON documents differ (paths and values), at most 10."""
    found: list[str] = []
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                found.append(f"{path}/{k}: only in {'second' if k not in a else 'first'}")
            else:
                found += differences(a[k], b[k], f"{path}/{k}")
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            found += differences(x, y, f"{path}[{i}]")
    elif a != b:
        found.append(f"{path}: {str(a)[:120]} != {str(b)[:120]}")
    return found[:10]
