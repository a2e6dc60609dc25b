"""The systems registry: one declaration per system, from which the CLI, the reports and the widgets
are derived. A toy eighth system (tests/support/toy_system.py) proves it: it gets all three with no other code."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dqkit.cli import build_parser, main
from dqkit.errors import DqkitError, ParameterError
from dqkit.systems import all_systems, get, register, unregister

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent


@pytest.fixture
def toy(monkeypatch):
    """The toy system, registered here and, through the environment, in every kernel a report starts."""
    from support import toy_system

    monkeypatch.setenv("DQKIT_SYSTEMS", "support.toy_system:TOY")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
    register(toy_system.TOY)
    yield toy_system.TOY
    unregister("toy")


def _nulls_csv(tmp_path: Path) -> Path:
    path = tmp_path / "people.csv"
    path.write_text("id,name\n1,Ann\n2,\n3,Cy\n4,\n")
    return path


def test_a_toy_system_gets_a_cli_subcommand_with_its_declared_help(toy, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["toy", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "the column whose NULLs are counted" in text and "Exit 0: no more NULLs than allowed" in text
    assert "--column COLUMN" in text and "TABLE" in text
    assert "toy" in build_parser().format_help()


def test_the_toy_cli_runs_and_exits_with_its_findings(toy, tmp_path, capsys, spark):
    csv = _nulls_csv(tmp_path)
    assert main(["toy", str(csv), "--column", "name", "--format", "json"]) == 1
    assert json.loads(capsys.readouterr().out) == {"verdict": "NULLS", "rows": 4, "nulls": 2, "column": "name"}
    assert main(["toy", str(csv), "--column", "name", "--allowed", "2"]) == 0
    assert "CLEAN: 2 of 4 rows have no name" in capsys.readouterr().out


def test_the_toy_cli_refuses_bad_parameters_before_spark(toy, tmp_path, capsys):
    csv = _nulls_csv(tmp_path)
    assert main(["toy", str(csv), "--column", "nope"]) == 2
    assert "nope" in capsys.readouterr().err
    assert main(["toy", str(csv), "--column", "name", "--allowed", "-1"]) == 2
    assert "--allowed must be at least 0" in capsys.readouterr().err
    assert main(["toy", str(tmp_path / "missing.csv"), "--column", "name"]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_the_toy_report_lists_its_parameters_and_renders_its_sections(toy, tmp_path, capsys):
    assert main(["report", "toy", "--list-parameters"]) == 0
    listing = capsys.readouterr().out
    assert "column" in listing and "allowed = 0" in listing and "output" in listing
    csv = _nulls_csv(tmp_path)
    out = tmp_path / "report"
    assert main(["report", "toy", "-p", "table", str(csv), "-p", "column", "name", "-o", str(out)]) == 0, \
        capsys.readouterr().err
    html = (out / "toy_report.html").read_text()
    assert "dqkit toy report" in html and "NULLS" in html and "2 of 4 rows have no name" in html
    assert "Traceback" not in html and "Reproduce with" in html


def test_the_toy_widget_is_derived_and_shows_its_declared_tabs(toy, tmp_path, spark):
    from dqkit.widgets import SystemController, SystemExplorer

    csv = _nulls_csv(tmp_path)
    controller = SystemController("toy", {"table": str(csv)}, spark=spark)
    assert "--column is required" in controller.problem()
    controller.set("column", "name")
    assert controller.problem() is None
    with pytest.raises(ParameterError, match="unknown parameter"):
        controller.set("colour", "red")
    explorer = SystemExplorer("toy", {"table": str(csv), "column": "name"}, spark=spark)
    assert set(explorer.fields) == {"table", "column", "allowed"}
    result = explorer.run(timeout=120)
    assert result is not None and result.nulls == 2
    titles = [explorer.view.get_title(i) for i in range(len(explorer.view.children))]
    assert titles == ["Verdict", "Counts"]
    assert "NULLS" in explorer.view.children[0].value and "allowed" in explorer.view.children[1].value
    explorer.fields["column"].value = "nope"
    explorer.start()
    assert "nope" in explorer.message.value and explorer.run_button.disabled is False


# ------------------------------------------------------------------------ the contract, every system
SYSTEMS = [s.name for s in all_systems()]


@pytest.mark.parametrize("name", SYSTEMS)
def test_invalid_params_are_refused_without_spark(name):
    code = ("import sys\nfrom dqkit.systems import get\nfrom dqkit.errors import DqkitError\n"
            f"s = get({name!r})\nvalues = dict(s.example)\n"
            "first = s.params.specs()[0]\nvalues[first.name] = 'no/such/input/anywhere'\n"
            "try:\n    s.prepare(values)\nexcept DqkitError as e:\n    print('REFUSED', e.message)\n"
            "print('SPARK' if 'pyspark' in sys.modules else 'NO SPARK')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120).stdout
    assert "REFUSED" in out and "NO SPARK" in out, out


@pytest.mark.parametrize("name", SYSTEMS)
def test_every_system_keeps_the_registry_contract(name, example_result):
    """``check_system`` on each built-in: parameters, round trips, CLI, exit codes, sections, rendering,
    escaping and saving, on the example's result (computed once per session, shared with the snapshots)."""
    from dqkit.systems import check_system

    done = check_system(name, result=example_result(name))
    assert done == ["params", "round trip", "exit codes", "cli", "sections", "result exit code", "render",
                    "escaped", "metrics", "save"]


def test_the_toy_system_keeps_the_registry_contract(toy, spark, monkeypatch):
    from dqkit.systems import check_system

    monkeypatch.chdir(ROOT)  # the example's paths are relative to the repository
    assert "save" in check_system(toy, spark=spark)


def _fake_result(*blocks: object) -> object:
    from dqkit.contract.result import Result, Verdict

    class Fake(Result):
        system = "toy"

        def to_dict(self) -> dict:
            return {"verdict": "CLEAN"}

        def sections(self, sample_rows: int = 10) -> list:
            return [Verdict(True, "CLEAN", "nothing", key="verdict"), *blocks]

        def frames(self, **_: object) -> dict:
            return {}

    return Fake()


def test_check_system_names_the_promise_a_system_breaks(toy):
    import dataclasses

    from dqkit.contract.result import Facts
    from dqkit.systems import SystemCheckError, check_system

    @dataclasses.dataclass(frozen=True)
    class Raw:  # a block that writes its text into HTML as it is
        title: str
        text: str
        key: str = "counts"

        def to_text(self) -> str:
            return self.text

        def to_html(self, charts: bool = True) -> str:
            return f"<p>{self.text}</p>"

    with pytest.raises(SystemCheckError, match="'toy', check 'escaped'"):
        check_system(toy, result=_fake_result(Facts("Counts", {"rows": 1}, key="counts"), Raw("Raw", "plain")), save=False)
    assert check_system(toy, result=_fake_result(Facts("Counts", {"rows": 1}, key="counts")), save=False)[-1] == "metrics"
    with pytest.raises(SystemCheckError, match="check 'exit codes': .*\\[2\\] are not declared"):
        check_system(dataclasses.replace(toy, exit_codes={0: "clean", 1: "findings"}),
                     result=_fake_result(Facts("Counts", {"rows": 1}, key="counts")), save=False)
    with pytest.raises(SystemCheckError, match="check 'sections': .*untitled"):
        check_system(toy, result=_fake_result(Facts("", {"rows": 1}, key="counts")), save=False)


def test_the_registry_and_every_declaration_load_without_pyspark():
    """``import dqkit.systems`` and every declaration (the constants they offer come from the kernel
    packages' Spark-free modules) import no pyspark: ``dqkit --help`` and a refused parameter start none."""
    code = ("import sys\nimport dqkit.systems as s\nfrom dqkit.delta._names import STAGES\n"
            "from dqkit.lake.modes import MODES\nfrom dqkit.repair.methods import METHODS\n"
            "from dqkit.tcfc.model import ORDERS\n"
            "names = [x.name for x in s.all_systems()]\n"
            "assert s.get('delta').params.spec('stages').choices is STAGES\n"
            "assert s.get('lake').params.spec('mode').choices is MODES\n"
            "assert s.get('repair').params.spec('method').choices is METHODS\n"
            "assert s.get('tcfc').params.spec('order').choices is ORDERS\n"
            "print(len(names), sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')))\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split(" ", 1) == [str(len(SYSTEMS)), "[]\n"], run.stdout


@pytest.mark.parametrize("name", SYSTEMS)
def test_every_section_of_the_example_result_has_a_stable_key_that_a_declared_tab_names(name, example_result):
    result = example_result(name)
    blocks = result.sections(sample_rows=10)
    unkeyed = [f"{type(b).__name__} {getattr(b, 'title', '')!r}" for b in blocks if not getattr(b, "key", "")]
    assert not unkeyed, unkeyed
    tabs = get(name).tabs
    named = {k for t in tabs for k in (*t.keys, *t.when)}
    assert any(not t.keys for t in tabs) or {b.key for b in blocks} <= named, ({b.key for b in blocks} - named)
