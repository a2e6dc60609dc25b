"""The dedup system's declaration (``dqkit.systems.dedup``): its CLI subcommand is derived from
``DedupParams``, ``--example-config`` works alone, output-shaping flags are checked against ``--out``
before Spark, and ``--out`` goes through the generic ``Result.save`` (the result carries the format)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from dqkit.cli import main
from dqkit.errors import ParameterError
from dqkit.systems import get

ROOT = Path(__file__).resolve().parent.parent
PEOPLE, CONFIG = "data/dedup/people.csv", "data/dedup/dedup.yaml"


def _cli_without_spark(*argv: str) -> subprocess.CompletedProcess:
    """``dqkit ARGV`` in a fresh interpreter that reports whether pyspark was imported."""
    code = ("import sys\nfrom dqkit.cli import main\nrc = main(sys.argv[1:])\n"
            "print('SPARK' if 'pyspark.sql' in sys.modules else 'NO SPARK', file=sys.stderr)\nsys.exit(rc)\n")
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_example_config_works_alone_and_prints_a_config_that_parses():
    done = subprocess.run([sys.executable, "-m", "dqkit.cli", "dedup", "--example-config"], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    from dqkit.dedup import parse_config

    assert parse_config(done.stdout).comparisons


@pytest.mark.parametrize("argv,message", [
    ([PEOPLE, "--config", CONFIG], "--key is required"),
    (["--key", "rec_id", "--config", CONFIG], "table is required"),
    ([PEOPLE, "--key", "rec_id", "--config", CONFIG, "--csv"], "--csv and --all-pairs shape what --out writes"),
    ([PEOPLE, "--key", "rec_id", "--config", CONFIG, "--all-pairs"], "--csv and --all-pairs shape what --out"),
    ([PEOPLE, "--key", "rec_id", "--config", CONFIG, "--csv", "--out", "catalog:db"], "CSV output goes to a folder"),
    ([PEOPLE, "--key", "rec_id", "--config", CONFIG, "--sources", "a,b"], "--sources names the two tables of --link"),
    ([PEOPLE, "--key", "rec_id", "--config", CONFIG, "--link", PEOPLE, "--sources", "a"], "--sources needs two different"),
    ([PEOPLE, "--key", "rec_id", "--config", CONFIG, "--truth", "rec_id"], "--truth is the key itself"),
    ([PEOPLE, "--key", "rec_id", "--config", CONFIG, "--threshold", "1.5"], "--threshold must be at least 0 and at most 1"),
])
def test_bad_dedup_arguments_exit_2_with_one_line_before_spark(argv, message):
    done = _cli_without_spark("dedup", *argv)
    assert done.returncode == 2, done.stderr
    assert f"dqkit: error: {message}" in done.stderr and "Traceback" not in done.stderr
    assert "NO SPARK" in done.stderr


def test_dedup_params_keep_the_old_flags_and_round_trip():
    params = get("dedup").params.parse({"table": PEOPLE, "key": "rec_id", "config": CONFIG, "link": PEOPLE,
                                        "sources": "crm,erp", "threshold": "0.8", "all_pairs": "true"})
    assert params.sources == ("crm", "erp") and params.threshold == 0.8 and params.all_pairs is True
    argv = params.to_argv()
    assert argv[0] == PEOPLE and "--link" in argv and "--all-pairs" in argv
    assert get("dedup").params.parse(json.loads(json.dumps(params.to_parameters()))) == params


def test_dedup_result_has_no_save_of_its_own():
    from dqkit.dedup import DedupResult
    from dqkit.contract.result import Result

    assert DedupResult.save is Result.save


def test_out_csv_goes_through_the_generic_save_with_every_pair(tmp_path, capsys, spark, monkeypatch):
    from dqkit.contract.result import Result

    calls = []
    original = Result.save
    monkeypatch.setattr(Result, "save", lambda self, *a, **k: calls.append(a) or original(self, *a, **k))
    monkeypatch.chdir(ROOT)
    out = tmp_path / "out"
    code = main(["dedup", PEOPLE, "--key", "rec_id", "--config", CONFIG, "--out", str(out), "--csv", "--all-pairs",
                 "--format", "json"])
    assert code == 1
    summary = json.loads(capsys.readouterr().out)
    assert calls == [(str(out),)]
    pairs = pd.concat(pd.read_csv(f, dtype=str) for f in sorted((out / "pairs").glob("*.csv")))
    assert len(pairs) == summary["candidate_pairs"] > summary["matching_pairs"]
    assert (out / "summary.json").is_file() and (out / "report.html").is_file()
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["clusters", "fingerprints", "golden", "pairs"]
    assert json.loads((out / "dedup_manifest.json").read_text())["all_pairs"] is True  # what --since reads


def test_saving_refuses_an_unknown_format(spark, monkeypatch):
    monkeypatch.chdir(ROOT)
    system = get("dedup")
    result = system.run(system.prepare(system.example), spark=spark)
    with pytest.raises(ParameterError, match="unknown save format 'xlsx'"):
        result.saving(format="xlsx")
    assert result.saving(format="csv", all_pairs=True).frames() == {}
