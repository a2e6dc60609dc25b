"""Issue 22, §2 and §4: a budget bounds the whole tcfc call (binding included), and every file dqkit reads
back (tcfc --reuse state, query --state, specs, rule files, configs) is validated before Spark.

No test here starts Spark: a slow fake engine stands in for binding, and ``dqkit.runtime.session.get_spark`` is
replaced by a recorder, so "refused before Spark" is asserted, not assumed.
"""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from dqkit.cli import main
from dqkit.errors import ParameterError, UnknownColumnError
from dqkit.tcfc import GRACE_S, UNCOMPLETED, SpecError, tcfc
from dqkit.tcfc.engines import BoundSide, Engine, EnginePool

from support.tables import sqlite_table


# ------------------------------------------------------------------------------------------ fixtures
def _spec(tmp_path: Path, **top) -> dict:
    url = sqlite_table(tmp_path / "db.sqlite", "t", "k int, v text", [(1, "a"), (2, "b")])
    return {**top, "pairs": [{"name": "p", "source": {"url": url, "table": "t"}, "target": {"url": url, "table": "t"},
                              "aggregates": [["count", "*", "n"]], "levels": [[], ["k"]]}]}


def _spec_file(tmp_path: Path, **top) -> Path:
    f = tmp_path / "spec.json"
    f.write_text(json.dumps(_spec(tmp_path, **top)), encoding="utf-8")
    return f


class SlowEngine(Engine):
    """An engine whose binding takes ``seconds`` (or until released): a slow connection or a Spark start."""

    kind = "sqlite"

    def __init__(self, seconds: float, release: threading.Event, fail: BaseException | None = None) -> None:
        super().__init__()
        self.seconds, self.release, self.fail = seconds, release, fail
        self.cancels = 0
        self.bound = 0  # bindings that ran to their end: none while the call under test returns

    def bind(self, side):
        self.release.wait(self.seconds)
        self.bound += 1
        if self.fail is not None:
            raise self.fail
        return BoundSide(side, self, {"k": "int", "v": "string"}, {"k": "k", "v": "v"}, {}, None)

    def aggregate(self, *a, **k):  # pragma: no cover - never reached: binding outlasts the budget
        raise AssertionError("no job may run after the budget expired")

    def cancel(self) -> None:
        self.cancels += 1


@pytest.fixture
def slow_binding(monkeypatch):
    """Every engine of the pool binds slowly (10 s); returns the engines made. Released at teardown."""
    release = threading.Event()
    made: list[SlowEngine] = []
    settings = {"seconds": 10.0, "fail": None}

    def engine(self, side, role):
        key = (side.url or "spark", role)
        if key not in self.engines:
            self.engines[key] = SlowEngine(settings["seconds"], release, settings["fail"])
            made.append(self.engines[key])
        return self.engines[key]

    monkeypatch.setattr(EnginePool, "engine", engine)
    yield made, settings
    release.set()


def _listing(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# ---------------------------------------------------------------------------- §2: the budget bounds the call
@pytest.mark.parametrize("budget", [0.3, 1.0])
def test_a_binding_slower_than_the_budget_returns_uncompleted_within_budget_plus_grace(tmp_path, slow_binding,
                                                                                        budget, wall_clock):
    made, _ = slow_binding
    with wall_clock.within(budget + GRACE_S, f"a call with a budget of {budget} s"):
        r = tcfc(_spec(tmp_path), budget=budget)
    assert made and not any(e.bound for e in made)  # returned while the 10 s bindings were still running
    assert r.status == UNCOMPLETED and r.exit_code == 3 and r.queries == 0
    assert [(j.pair, j.level, j.kind) for j in r.pending] == [("p", 1, "ROOT")]
    assert r.progress_lines() == ["p: nothing proven yet (not bound in time); 1 job(s) still pending"]
    assert any("while binding the engines" in n for n in r.state.notes)
    assert made and any(e.cancels >= 1 for e in made)  # the engines were asked to stop what they were doing
    r.close()


def test_the_budget_clock_can_start_before_the_call_and_binding_is_not_waited_for(tmp_path, slow_binding,
                                                                                   wall_clock):
    """``started`` (what the CLI passes: the command's start) counts the time already spent against the budget."""
    made, _ = slow_binding
    with wall_clock.within(GRACE_S, "a call whose budget was spent before it"):
        r = tcfc(_spec(tmp_path), budget=5.0, started=time.monotonic() - 5.0)
    assert r.status == UNCOMPLETED and r.exit_code == 3 and not any(e.bound for e in made)
    r.close()


def test_cancel_stops_waiting_for_a_slow_binding(tmp_path, slow_binding, wall_clock):
    made, _ = slow_binding
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    with wall_clock.within(0.3 + GRACE_S, "a call cancelled after 0.3 s"):
        r = tcfc(_spec(tmp_path), cancel=stop)  # no budget: only the cancel ends it
    assert stop.is_set() and made and not any(e.bound for e in made)
    assert r.status == UNCOMPLETED and r.state.cancelled_by_user
    assert any(n.startswith("it was cancelled while binding") for n in r.state.notes)
    r.close()


def test_a_bind_error_found_within_the_budget_is_still_an_error(tmp_path, slow_binding):
    _, settings = slow_binding
    settings.update(seconds=0.0, fail=UnknownColumnError("pair 'p': the source has no column 'k'"))
    with pytest.raises(UnknownColumnError, match="no column 'k'"):
        tcfc(_spec(tmp_path), budget=30)


def test_cli_tcfc_budget_bounds_the_command_and_the_text_is_sentences(tmp_path, slow_binding, capsys, wall_clock):
    made, _ = slow_binding
    spec = _spec_file(tmp_path)
    with wall_clock.within(0.5 + GRACE_S, "dqkit tcfc --budget 0.5"):
        code = main(["tcfc", "--spec", str(spec), "--budget", "0.5"])
    out = capsys.readouterr().out
    assert code == 3 and made and not any(e.bound for e in made)
    assert "Empty DataFrame" not in out and "Columns: [" not in out
    assert "UNCOMPLETED" in out and "p: nothing proven yet (not bound in time); 1 job(s) still pending" in out
    assert "no compare job ran" in out
    assert main(["tcfc", "--spec", str(spec), "--budget", "0.5", "--format", "json"]) == 3
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == UNCOMPLETED and doc["grace_s"] == GRACE_S and doc["pending"][0]["pair"] == "p"
    assert doc["progress"] == ["p: nothing proven yet (not bound in time); 1 job(s) still pending"]


def test_cli_tcfc_saves_out_after_an_expired_binding_without_starting_spark(tmp_path, slow_binding, spark_calls,
                                                                            capsys, wall_clock):
    import pyarrow.parquet as pq

    made, _ = slow_binding
    spec, out = _spec_file(tmp_path), tmp_path / "out"
    # the bound: the budget, the grace and writing summary.json, report.html and the report
    with wall_clock.within(0.5 + GRACE_S + 1.0, "dqkit tcfc --budget 0.5 --out"):
        assert main(["tcfc", "--spec", str(spec), "--budget", "0.5", "--out", str(out)]) == 3
    assert not any(e.bound for e in made)
    assert spark_calls == [] and json.loads((out / "summary.json").read_text())["status"] == UNCOMPLETED
    report = pq.read_table(out / "report")
    assert report.num_rows == 0 and report.schema.names[:3] == ["pair", "level", "X"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary folder left


def test_cli_tcfc_budget_clock_starts_when_the_command_starts(tmp_path, slow_binding, spark_calls, monkeypatch,
                                                              capsys, wall_clock):
    """The clock ``run_tcfc`` counts from is the one ``dqkit.cli.main`` stamped before parsing, so the
    command's own start-up (here a parser made slow on purpose) is spent from the budget."""
    import dqkit.cli
    import dqkit.tcfc

    spec = _spec_file(tmp_path)
    built: list[float] = []
    clocks: list[float | None] = []
    build, run = dqkit.cli.build_parser, dqkit.tcfc.run_tcfc

    def slow_build():
        built.append(time.monotonic())
        time.sleep(0.6)
        return build()

    def recording_run(*args, **kwargs):
        clocks.append(kwargs.get("started"))
        return run(*args, **kwargs)

    monkeypatch.setattr(dqkit.cli, "build_parser", slow_build)
    monkeypatch.setattr(dqkit.tcfc, "run_tcfc", recording_run)
    t = time.monotonic()
    with wall_clock.within(1 + GRACE_S, "a 1 s budget after a 0.6 s start-up"):
        assert main(["tcfc", "--spec", str(spec), "--budget", "1"]) == 3
    assert clocks and clocks[0] is not None and t <= clocks[0] <= built[0]  # the budget counts the start-up
    assert spark_calls == []


@pytest.mark.parametrize("flag, value, variable", [("--master", "local[1]", "DQKIT_SPARK_MASTER"),
                                                   ("--remote", "sc://nowhere:15002", "SPARK_REMOTE")])
def test_cli_tcfc_master_or_remote_reach_the_binding_through_the_environment_not_a_session_up_front(
        tmp_path, slow_binding, spark_calls, monkeypatch, capsys, flag, value, variable, wall_clock):
    for name in ("SPARK_REMOTE", "DQKIT_SPARK_MASTER"):  # set then removed: what the command sets is undone
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    with wall_clock.within(0.5 + GRACE_S, f"dqkit {flag} ... tcfc --budget 0.5"):
        assert main([flag, value, "tcfc", "--spec", str(_spec_file(tmp_path)), "--budget", "0.5"]) == 3
    assert spark_calls == []  # no session started before the budget
    import os

    assert os.environ.get(variable) == value


def test_cli_tcfc_keeps_stderr_across_a_binding_that_redirects_it(tmp_path):
    """Starting Spark points descriptor 2 at the JVM log; the CLI's guard puts the terminal's back."""
    import os

    from dqkit.systems import get

    before = os.fstat(2)
    log = open(tmp_path / "jvm.log", "w")
    try:
        with get("tcfc").cli_guard():
            os.dup2(log.fileno(), 2)  # what dqkit.runtime.session does while a JVM launches
            assert os.path.sameopenfile(2, log.fileno())
    finally:
        log.close()
    after = os.fstat(2)
    assert (after.st_dev, after.st_ino) == (before.st_dev, before.st_ino)


def test_cli_tcfc_leaves_without_waiting_for_a_binding_still_under_way(monkeypatch):
    """Only in the ``dqkit`` process and only while a binding thread is alive: an exit handler ends the
    process with the exit code instead of waiting for the thread (never when main is called from Python)."""
    import atexit
    import sys

    from dqkit.systems import get

    handlers: list = []
    monkeypatch.setattr(atexit, "register", handlers.append)
    leave = get("tcfc").cli_exit
    release = threading.Event()
    binder = threading.Thread(target=release.wait, name="dqkit-tcfc-bind", daemon=True)
    binder.start()
    try:
        leave(3)
        assert handlers == []  # called from Python (pytest): nothing registered
        monkeypatch.setattr(sys, "argv", ["/usr/local/bin/dqkit", "tcfc"])
        leave(3)
        assert len(handlers) == 1
        exits: list[int] = []
        monkeypatch.setattr("os._exit", exits.append)
        handlers[0]()
        assert exits == [3]
    finally:
        release.set()
        binder.join()
    handlers.clear()
    # no binding under way: the process ends normally (another test's binding may still be alive in this
    # worker, so the threads this check sees are those without one)
    alive = threading.enumerate
    monkeypatch.setattr("threading.enumerate", lambda: [t for t in alive() if t.name != "dqkit-tcfc-bind"])
    leave(3)
    assert handlers == []


def test_the_budget_and_grace_are_stated_in_the_help(capsys):
    assert main(["tcfc", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"within the budget + {GRACE_S:g} s (GRACE_S)" in text and "engine start-up included" in text


# --------------------------------------------------------------------- out-of-range numbers (tcfc, query)
@pytest.mark.parametrize("argv, words", [
    (["--budget", "0"], "more than 0 seconds"),
    (["--budget", "-5"], "more than 0 seconds"),
    (["--budget", "nan"], "finite number"),
    (["--budget", "inf"], "finite number"),
    (["--connect-timeout", "0"], "--connect-timeout"),
    (["--connect-timeout", "-1"], "--connect-timeout"),
    (["--sample-rows", "-1"], "--sample-rows"),
    (["--resume"], "--resume needs --reuse"),
])
def test_cli_tcfc_refuses_out_of_range_numbers_before_spark_and_writes_nothing(tmp_path, spark_calls, capsys,
                                                                              argv, words, wall_clock):
    spec = _spec_file(tmp_path)
    before = _listing(tmp_path)
    with wall_clock.within(2, "a refusal"):
        assert main(["tcfc", "--spec", str(spec), "--out", str(tmp_path / "out"), *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and err.startswith("dqkit: error:") and "Traceback" not in err
    assert spark_calls == [] and _listing(tmp_path) == before and not (tmp_path / "out").exists()


@pytest.mark.parametrize("budget", [0, -1, float("inf"), float("nan"), True, "soon"])
def test_the_api_refuses_the_same_budgets_as_the_cli(tmp_path, budget):
    with pytest.raises(SpecError, match="budget"):
        tcfc(_spec(tmp_path), budget=budget)
    with pytest.raises(SpecError, match="budget"):
        tcfc(_spec(tmp_path, budget=budget))  # the spec's own budget too


def test_the_api_refuses_a_non_positive_connect_timeout(tmp_path):
    with pytest.raises(ParameterError, match="connect-timeout"):
        tcfc(_spec(tmp_path), connect_timeout=0)


@pytest.mark.parametrize("kwargs, words", [
    ({"threshold": 1.5}, "threshold"), ({"threshold": -0.1}, "threshold"), ({"threshold": float("nan")}, "threshold"),
    ({"partitions": 0}, "partitions"), ({"nb_parts": 0}, "nb_parts"), ({"cost_units": "hours"}, "cost units"),
])
def test_daisy_refuses_out_of_range_numbers_before_spark(spark_calls, kwargs, words):
    from dqkit.relax import Daisy

    with pytest.raises(ParameterError, match=words):
        Daisy(**kwargs)
    assert spark_calls == []


# ------------------------------------------------------------------------ §4: files read back are validated
JUNK = {
    "empty": b"",
    "blank": b" \n\t\n",
    "binary junk": b"PK\x03\x04\x00\x00\x08\x00junk\x00\x01",
    "non-UTF-8": b'{"version": 1, "caf\xe9": \xff}',
    "truncated JSON": b'{"version": 1, "status": "COMPLETED", "pairs": {"p": {"fingerprint": "ab',
}
JUNK_WORDS = {"empty": "is empty", "blank": "is empty", "binary junk": "binary", "non-UTF-8": "not UTF-8",
              "truncated JSON": "truncated"}


def _tcfc_state_cases(tmp_path: Path) -> dict[str, tuple[bytes, str]]:
    cases = {k: (v, JUNK_WORDS[k]) for k, v in JUNK.items()}
    cases["wrong version"] = (json.dumps({"version": 99, "status": "COMPLETED", "pairs": {}}).encode(),
                              "version 99; this dqkit reads version 1")
    cases["a JSON list"] = (b"[1, 2, 3]", "holds a JSON list, not an object")
    cases["wrong shape"] = (json.dumps({"version": 1, "status": "COMPLETED", "pairs": []}).encode(),
                            "'pairs' is not an object")
    from dqkit.tcfc import load_spec

    fp = load_spec(_spec(tmp_path)).pairs[0].fingerprint()
    cases["undecodable value"] = (json.dumps({"version": 1, "status": "UNCOMPLETED", "pairs": {"p": {
        "fingerprint": fp, "examined": 1, "report": [], "pending": [],
        "leaves": [{"level": 2, "values": [{"i": "not a number"}], "error_count": 1}]}}}).encode(),
        "pair 'p' does not decode")
    cases["a level the pair lacks"] = (json.dumps({"version": 1, "status": "UNCOMPLETED", "pairs": {"p": {
        "fingerprint": fp, "examined": 1, "report": [], "leaves": [],
        "pending": [{"level": 7, "kind": "ERROR", "filter_cols": [], "filter_values": [], "parent_job": 1}]}}}).encode(),
        "names level 7")
    return cases


TCFC_STATE_KINDS = [*JUNK, "wrong version", "a JSON list", "wrong shape", "undecodable value", "a level the pair lacks"]


@pytest.mark.parametrize("kind", TCFC_STATE_KINDS)
def test_cli_tcfc_refuses_a_corrupt_reuse_state_before_any_engine(tmp_path, spark_calls, capsys, kind):
    content, words = _tcfc_state_cases(tmp_path)[kind]
    spec = _spec_file(tmp_path)
    reuse = tmp_path / "reuse"
    reuse.mkdir()
    (reuse / "tcfc_state.json").write_bytes(content)
    before = _listing(tmp_path)
    for mode in ([], ["--resume"]):
        assert main(["tcfc", "--spec", str(spec), "--reuse", str(reuse), "--out", str(tmp_path / "out"), *mode]) == 2
        err = capsys.readouterr().err
        assert words in err and str(reuse / "tcfc_state.json") in err, err
        assert "rerun without --reuse" in err and "Traceback" not in err and len(err.strip().splitlines()) == 2
    assert spark_calls == [] and _listing(tmp_path) == before and not (tmp_path / "out").exists()


def test_the_api_refuses_a_corrupt_reuse_state_the_same_way(tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "tcfc_state.json").write_bytes(b"\xff\xfejunk\xfe")
    with pytest.raises(ParameterError, match="tcfc_state.json is not UTF-8 text"):
        tcfc(_spec(tmp_path), reuse=str(tmp_path / "r"))
    (tmp_path / "file").write_text("x")
    with pytest.raises(ParameterError, match="is a file"):
        tcfc(_spec(tmp_path), reuse=str(tmp_path / "file"))


SPEC_CASES = {**{k: (v, JUNK_WORDS[k]) for k, v in JUNK.items()},
              "truncated JSON": (b'{"pairs": [{"name": "p", "source": "a.parquet"', "not valid YAML/JSON"),
              "a bare number": (b"42", "holds a int, not a mapping"),
              "a folder": (None, "is a folder, not a file")}


@pytest.mark.parametrize("kind", list(SPEC_CASES))
def test_cli_tcfc_refuses_a_corrupt_spec_naming_the_file(tmp_path, spark_calls, capsys, kind):
    content, words = SPEC_CASES[kind]
    spec = tmp_path / "spec.json"
    if content is None:
        spec.mkdir()
    else:
        spec.write_bytes(content)
    before = _listing(tmp_path)
    assert main(["tcfc", "--spec", str(spec), "--budget", "5"]) == 2
    err = capsys.readouterr().err
    assert words in err and str(spec) in err and "Traceback" not in err, err
    assert spark_calls == [] and _listing(tmp_path) == before


# ---------------------------------------------------------------------------------------- query --state
def _query_inputs(tmp_path: Path) -> tuple[Path, Path]:
    src = tmp_path / "cities.csv"
    src.write_text("tid,Zip,City\nt1,9001,LA\nt2,9001,SF\n", encoding="utf-8")
    rules = tmp_path / "rules.txt"
    rules.write_text("Zip -> City\n", encoding="utf-8")
    return src, rules


def _good_query_state(folder: Path) -> None:
    """A state folder shaped as ``Daisy.save_state`` writes it (Parquet parts written with pyarrow)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (folder / "tables" / "cities").mkdir(parents=True)
    pq.write_table(pa.table({"tid": ["t1"]}), folder / "tables" / "cities" / "part-0.parquet")
    (folder / "state.json").write_text(json.dumps({"version": 1, "tables": {"cities": {
        "fingerprint": "1:2", "key": "tid", "rules": ["r1"], "cost": None, "fully_checked": False,
        "dc_checked_ranges": {}, "pairs": []}}}), encoding="utf-8")


QUERY_STATE_CASES = {**{k: JUNK_WORDS[k] for k in JUNK}, "wrong version": "version 7; this dqkit reads version 1",
                     "wrong shape": "'tables' is not an object", "a missing Parquet part": "which is missing",
                     "a junk Parquet part": "is not a readable Parquet file",
                     "a broken cost model": "its cost model does not load"}


@pytest.mark.parametrize("kind", list(QUERY_STATE_CASES))
def test_cli_query_refuses_a_corrupt_state_before_spark_and_leaves_it_as_it_was(tmp_path, spark_calls, capsys,
                                                                                kind, wall_clock):
    src, rules = _query_inputs(tmp_path)
    state = tmp_path / "state"
    _good_query_state(state)
    meta = json.loads((state / "state.json").read_text())
    if kind in JUNK:
        (state / "state.json").write_bytes(JUNK[kind])
    elif kind == "wrong version":
        (state / "state.json").write_text(json.dumps({**meta, "version": 7}))
    elif kind == "wrong shape":
        (state / "state.json").write_text(json.dumps({**meta, "tables": [["cities", "1:2"]]}))
    elif kind == "a missing Parquet part":
        (state / "tables" / "cities" / "part-0.parquet").unlink()
        (state / "tables" / "cities").rmdir()
    elif kind == "a junk Parquet part":
        (state / "tables" / "cities" / "part-0.parquet").write_bytes(b"PAR1 this is not a footer")
    else:
        meta["tables"]["cities"]["cost"] = {"n": 3}
        (state / "state.json").write_text(json.dumps(meta))
    before = _listing(tmp_path)
    with wall_clock.within(2, "a refusal"):
        assert main(["query", "--table", f"cities={src}", "--rules", f"cities={rules}", "--key", "cities=tid",
                     "--state", str(state), "SELECT Zip FROM cities"]) == 2
    err = capsys.readouterr().err
    assert QUERY_STATE_CASES[kind] in err and str(state) in err, err
    assert f"delete {state}" in err and "Traceback" not in err
    assert spark_calls == [] and _listing(tmp_path) == before


def test_the_query_state_checker_accepts_what_save_state_writes_and_an_empty_folder(tmp_path):
    from dqkit.relax.state import check_state_folder

    _good_query_state(tmp_path / "s")
    assert check_state_folder(tmp_path / "s")["tables"]["cities"]["key"] == "tid"
    (tmp_path / "new").mkdir()
    assert check_state_folder(tmp_path / "new") is None and check_state_folder(tmp_path / "absent") is None


RULE_CASES = {"empty": (b"", "is empty"), "binary junk": (b"Zip -> City\x00\x00\x01", "binary"),
              "non-UTF-8": (b"Zip -> Cit\xe9\n", "not UTF-8")}


@pytest.mark.parametrize("kind", list(RULE_CASES))
def test_cli_query_refuses_a_corrupt_rules_file_before_spark(tmp_path, spark_calls, capsys, kind):
    src, rules = _query_inputs(tmp_path)
    content, words = RULE_CASES[kind]
    rules.write_bytes(content)
    before = _listing(tmp_path)
    assert main(["query", "--table", f"cities={src}", "--rules", f"cities={rules}", "SELECT Zip FROM cities"]) == 2
    err = capsys.readouterr().err
    assert words in err and str(rules) in err and "Traceback" not in err, err
    assert spark_calls == [] and _listing(tmp_path) == before


# --------------------------------------------------------------------------- configs: dedup, costs, lineage
CONFIG_CASES = {"empty": (b"", "is empty"), "binary junk": (b"blocking:\x00\x00", "binary"),
                "non-UTF-8": (b"blocking: [[surnam\xe9]]\n", "not UTF-8")}


@pytest.mark.parametrize("kind", list(CONFIG_CASES))
@pytest.mark.parametrize("reader", ["dedup config", "cost file"])
def test_yaml_configs_refuse_corrupt_files_naming_them(tmp_path, kind, reader):
    from dqkit.dedup.config import ConfigError, load_config
    from dqkit.lake.optret import CostFileError, load_costs

    content, words = CONFIG_CASES[kind]
    f = tmp_path / "conf.yaml"
    f.write_bytes(content)
    load, error = {"dedup config": (load_config, ConfigError), "cost file": (load_costs, CostFileError)}[reader]
    with pytest.raises(error, match=words) as info:
        load(f)
    assert str(f) in str(info.value) and info.value.hint and f.read_bytes() == content


@pytest.mark.parametrize("content, words", [
    (b"", "is empty"), (b'{"tables": [{"name": "a"', "truncated"), (b"\xff\xfe", "not UTF-8"),
    (b'{"tables": [1, 2]}', "'tables' is not a list"), (b'"just text"', "holds a JSON string"),
])
def test_a_corrupt_lineage_manifest_is_refused_naming_it(tmp_path, content, words):
    from dqkit.errors import SourceError
    from dqkit.lake import lineage_provider

    (tmp_path / "_lineage.json").write_bytes(content)
    with pytest.raises(SourceError, match=words) as info:
        lineage_provider(str(tmp_path))
    assert "_lineage.json" in str(info.value) and "delete" in info.value.hint
