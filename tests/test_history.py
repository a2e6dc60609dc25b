"""--history on every system: an append-only record of metrics, gates calibrated on each metric's own
series, and every class of bad history input refused before Spark with the history left as it was."""
from __future__ import annotations

import json
import os
import shutil
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import pytest

from dqkit.cli import main
from dqkit.history.gates import judge
from dqkit.history.record import HistoryOptions, params_digest, parse_as_of
from dqkit.history.series import drift, gate, psi_from_quantiles, series_of, split_metric
from dqkit.history.store import FORMAT, MARKER, History, HistoryError, new_run
from dqkit.systems import register, unregister

START = date(2026, 1, 5)  # a Monday


@pytest.fixture
def gauge(tmp_path):
    from support import history_system

    register(history_system.GAUGE)
    table = tmp_path / "t.txt"
    table.write_text("1\n")
    yield str(table)
    unregister("gauge")


def nights(n: int, seed: int = 0, trend: float = 0.0, weekly: float = 0.0) -> list[float]:
    rng = np.random.default_rng(seed)
    days = [START + timedelta(i) for i in range(n)]
    return [100 + trend * i + (weekly if d.weekday() >= 5 else 0) + rng.normal(0, 1) for i, d in enumerate(days)]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())} if folder.exists() else {}


def run_gauge(table: str, hist: Path, value: float, day: date, *extra: str) -> int:
    Path(table).write_text(f"{value!r}\n")
    return main(["gauge", table, "--history", str(hist), "--as-of", day.isoformat(), *extra])


# ------------------------------------------------------------------------------- the record
def test_an_append_writes_one_file_per_run_and_reads_back_every_metric(tmp_path):
    h = History(tmp_path / "h")
    for i in range(3):
        h.append(new_run("gauge", "t", "d", {"value": float(i), "x": 1.0}, START + timedelta(i)))
    files = h.files()
    assert len(files) == 3 and (tmp_path / "h" / MARKER).exists()
    frame = h.read()
    assert len(frame) == 6 and set(frame["format"]) == {FORMAT}
    s = series_of(frame)[("gauge", "t", "d")]
    assert [r[3]["value"] for r in s.runs] == [0.0, 1.0, 2.0]
    assert [r[1] for r in s.runs] == [START, START + timedelta(1), START + timedelta(2)]


def test_old_files_are_never_rewritten_and_two_concurrent_appends_both_land(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    h = History(tmp_path / "h")
    h.append(new_run("gauge", "t", "d", {"value": 1.0}, START))
    before = snapshot(tmp_path / "h")
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda v: History(tmp_path / "h").append(new_run("gauge", "t", "d", {"value": v}, START)),
                      [2.0, 3.0]))
    after = snapshot(tmp_path / "h")
    assert all(after[name] == data for name, data in before.items())
    assert sorted(History(tmp_path / "h").read()["value"]) == [1.0, 2.0, 3.0]


def test_a_killed_append_leaves_the_history_as_it_was(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    h = History(tmp_path / "h")
    h.append(new_run("gauge", "t", "d", {"value": 1.0}, START))
    before = snapshot(tmp_path / "h")

    def dies(table, where, *a, **k):
        Path(where).write_bytes(b"PAR1 half")
        raise KeyboardInterrupt

    monkeypatch.setattr(pq, "write_table", dies)
    with pytest.raises(KeyboardInterrupt):
        h.append(new_run("gauge", "t", "d", {"value": 2.0}, START))
    assert snapshot(tmp_path / "h") == before and list(h.read()["value"]) == [1.0]


def test_compaction_bounds_the_files_and_keeps_every_record(tmp_path):
    h = History(tmp_path / "h")
    for i in range(5):
        h.append(new_run("gauge", "t", "d", {"value": float(i)}, START + timedelta(i)))
    before = h.read().sort_values("run_id").reset_index(drop=True)
    assert h.compact() == (5, 1)
    after = h.read().sort_values("run_id").reset_index(drop=True)
    assert after.equals(before)
    h.append(new_run("gauge", "t", "d", {"value": 9.0}, START + timedelta(9)))
    assert len(h.files()) == 2 and len(h.read()) == 6


def test_a_compaction_killed_before_removing_its_inputs_loses_and_doubles_nothing(tmp_path):
    h = History(tmp_path / "h")
    for i in range(3):
        h.append(new_run("gauge", "t", "d", {"value": float(i)}, START + timedelta(i)))
    keep = {p: p.read_bytes() for p in h.files()}
    h.compact()
    for p, data in keep.items():  # the old files back, as if the removal never ran
        p.write_bytes(data)
    assert sorted(h.read()["value"]) == [0.0, 1.0, 2.0]


# ------------------------------------------------------------------------------- the gates
def test_a_level_shift_is_flagged_and_a_clean_night_is_not():
    ys = nights(29, seed=1)
    days = [START + timedelta(i) for i in range(29)]
    clean = judge("m", days[:28], ys[:28], days[28], ys[28])
    assert clean is not None and not clean.anomalous and clean.runs == 28
    bad = judge("m", days[:28], ys[:28], days[28], ys[28] + 15)
    assert bad.anomalous and bad.low < ys[28] < bad.high


def test_a_slow_trend_is_followed_not_flagged():
    ys = nights(29, seed=2, trend=3.0)  # +3 a night against noise 1: a level band would alarm
    days = [START + timedelta(i) for i in range(29)]
    j = judge("m", days[:28], ys[:28], days[28], ys[28])
    assert j.method in ("trend", "weekly") and not j.anomalous


def test_weekly_seasonality_is_learnt_once_there_are_two_weeks():
    ys = nights(29, seed=3, weekly=20.0)  # weekends 20 higher, noise 1
    days = [START + timedelta(i) for i in range(29)]
    saturday = next(i for i in range(21, 29) if days[i].weekday() == 5)
    j = judge("m", days[:saturday], ys[:saturday], days[saturday], ys[saturday])
    assert j.method == "weekly" and not j.anomalous
    weekday_value = judge("m", days[:saturday], ys[:saturday], days[saturday], ys[saturday] - 20)
    assert weekday_value.anomalous  # a Saturday at a weekday's level is an anomaly


def test_a_constant_metric_does_not_alarm_on_noise_but_does_on_a_real_move():
    days = [START + timedelta(i) for i in range(11)]
    assert not judge("mean", days[:10], [0.5] * 10, days[10], 0.5 + 1e-7).anomalous
    assert judge("distinct", days[:10], [5.0] * 10, days[10], 6.0).anomalous
    assert judge("null_share", days[:10], [0.0] * 10, days[10], 0.05).anomalous


def test_clean_series_alarm_on_about_the_false_positive_rate_asked():
    rng = np.random.default_rng(7)
    days = [START + timedelta(i) for i in range(21)]
    alarms = 0
    for _ in range(60):
        ys = 50 + rng.normal(0, 2, 21)
        alarms += judge("m", days[:20], ys[:20], days[20], ys[20], fpr=0.01).anomalous
    assert alarms <= 3  # 60 clean nights at fpr 0.01: more than 3 alarms would be far off the bound
    wide = judge("m", days[:20], list(ys[:20]), days[20], ys[20], fpr=0.001)
    narrow = judge("m", days[:20], list(ys[:20]), days[20], ys[20], fpr=0.2)
    assert wide.high - wide.low > narrow.high - narrow.low


def test_fewer_runs_than_the_minimum_are_not_judged():
    days = [START + timedelta(i) for i in range(7)]
    assert judge("m", days[:6], [1.0] * 6, days[6], 100.0) is None
    assert judge("m", days[:6], [1.0] * 6, days[6], 100.0, min_runs=5).anomalous


def test_drift_by_psi_from_quantiles_and_topk_shares():
    ref = {0.0: 0, 0.05: 5, 0.25: 25, 0.5: 50, 0.75: 75, 0.95: 95, 1.0: 100}
    assert psi_from_quantiles(ref, ref) == pytest.approx(0, abs=1e-3)
    shifted = {p: v * 1.5 for p, v in ref.items()}
    assert psi_from_quantiles(ref, shifted) > 0.2
    d = drift({"c.top[a]": 0.5, "c.top[b]": 0.5, "x.p50": 1.0}, {"c.top[a]": 0.4, "c.top[b]": 0.5, "c.top[z]": 0.1})
    assert d == {"c.drift_topk": pytest.approx(0.1)}
    assert split_metric("c.top[a.b]") == ("c", "top[a.b]") and split_metric("my.col.p50") == ("my.col", "p50")


def test_series_are_kept_apart_by_table_and_by_parameters(tmp_path):
    h = History(tmp_path / "h")
    for i in range(8):
        h.append(new_run("gauge", "orders", "d1", {"value": 10.0}, START + timedelta(i)))
        h.append(new_run("gauge", "users", "d1", {"value": 1000.0}, START + timedelta(i)))
    s = series_of(h.read())
    assert set(s) == {("gauge", "orders", "d1"), ("gauge", "users", "d1")}
    assert not any(j.anomalous for j in gate(s[("gauge", "users", "d1")], {"value": 1000.0}, START + timedelta(9)))
    assert all(j.anomalous for j in gate(s[("gauge", "orders", "d1")], {"value": 1000.0}, START + timedelta(9))
               if j.metric == "value")


# ------------------------------------------------------------------------------- the CLI, on every system
def test_history_options_are_on_every_system_but_history_itself():
    from dqkit.cli import build_parser
    from dqkit.systems import all_systems

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for s in all_systems():
        flags = {o for a in sub.choices[s.name]._actions for o in a.option_strings}
        assert ("--history" in flags) == (s.name != "history"), s.name
        if s.name != "history":
            assert {"--as-of", "--fpr", "--min-runs", "--history-table"} <= flags


def test_the_cli_gates_a_run_after_seven_nights_and_exits_1_listing_the_anomaly(gauge, tmp_path, capsys):
    hist = tmp_path / "hist"
    ys = nights(9, seed=4)
    for i in range(8):
        assert run_gauge(gauge, hist, ys[i], START + timedelta(i)) == 0
    assert "metrics are judged from the 7th on" in capsys.readouterr().out
    assert run_gauge(gauge, hist, ys[8] + 50, START + timedelta(8), "--format", "json") == 1
    out = json.loads(capsys.readouterr().out)
    (a,) = out["history"]["anomalies"]
    assert a["metric"] == "value" and a["runs"] == 8 and a["low"] < ys[8] < a["high"] and a["method"]
    assert len(History(hist).files()) == 9
    assert run_gauge(gauge, hist, ys[8], START + timedelta(9)) == 0  # a clean night: the system's own code


def test_changing_a_shaping_parameter_starts_a_new_series_but_a_new_input_path_does_not(gauge, tmp_path):
    from support.history_system import GaugeParams

    a = GaugeParams.parse({"table": gauge})
    assert params_digest(a) == params_digest(GaugeParams.parse({"table": "/elsewhere.txt"}))
    assert params_digest(a) != params_digest(GaugeParams.parse({"table": gauge, "label": "b"}))


# ------------------------------------------------------------------------------- hostile input: exit 2, unchanged
@pytest.fixture
def filled(gauge, tmp_path):
    hist = tmp_path / "hist"
    for i in range(3):
        assert run_gauge(gauge, hist, 1.0 + i, START + timedelta(i)) == 0
    return gauge, hist


def _refused(capsys, code: int, words: str) -> None:
    err = capsys.readouterr().err
    assert code == 2 and words in err and "Traceback" not in err, err


def test_a_folder_that_is_not_a_history_is_refused(gauge, tmp_path, capsys):
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    _refused(capsys, run_gauge(gauge, other, 1.0, START), "not a dqkit history")
    assert snapshot(other) == {"notes.txt": b"mine"}


def test_a_corrupt_part_file_is_refused_and_named(filled, capsys):
    gauge, hist = filled
    victim = History(hist).files()[1]
    victim.write_bytes(victim.read_bytes()[:40])
    before = snapshot(hist)
    _refused(capsys, run_gauge(gauge, hist, 1.0, START + timedelta(5)), victim.name)
    assert snapshot(hist) == before


def test_a_record_from_a_newer_dqkit_is_refused(filled, capsys):
    import pyarrow.parquet as pq

    gauge, hist = filled
    f = History(hist).files()[0]
    t = pq.read_table(f)
    t = t.set_column(0, "format", __import__("pyarrow").array([FORMAT + 1] * len(t), "int32"))
    pq.write_table(t, f)
    before = snapshot(hist)
    _refused(capsys, run_gauge(gauge, hist, 1.0, START + timedelta(5)), "newer dqkit")
    assert snapshot(hist) == before
    (hist / MARKER).write_text(json.dumps({"format": FORMAT + 1}))
    with pytest.raises(HistoryError, match="newer dqkit"):
        History(hist)


@pytest.mark.parametrize("as_of, words", [("2999-01-01", "in the future"), ("27/11/2026", "is not a date"),
                                          ("yesterday", "is not a date")])
def test_an_as_of_in_the_future_or_unparsable_is_refused(filled, capsys, as_of, words):
    gauge, hist = filled
    before = snapshot(hist)
    code = main(["gauge", gauge, "--history", str(hist), "--as-of", as_of])
    _refused(capsys, code, words)
    assert snapshot(hist) == before


@pytest.mark.parametrize("fpr", ["0", "0.5", "-0.1", "0.7", "x"])
def test_an_fpr_outside_zero_to_one_half_is_refused(filled, capsys, fpr):
    gauge, hist = filled
    before = snapshot(hist)
    code = main(["gauge", gauge, "--history", str(hist), "--fpr", fpr])
    _refused(capsys, code, "--fpr")
    assert snapshot(hist) == before


def test_companion_options_without_history_are_refused(gauge, capsys):
    _refused(capsys, main(["gauge", gauge, "--fpr", "0.1"]), "needs --history")


def test_another_tables_history_in_the_same_folder_is_kept_apart_not_refused(filled, tmp_path, capsys):
    gauge, hist = filled
    other = tmp_path / "other.txt"
    assert run_gauge(str(other), hist, 1000.0, date(2026, 1, 20)) == 0
    keys = set(series_of(History(hist).read()))
    assert {k[1] for k in keys} == {os.path.abspath(gauge), str(other.resolve())}


def test_as_of_defaults_to_today():
    assert parse_as_of(None) == date.today()
    assert parse_as_of("2026-01-05", today=date(2026, 2, 1)) == START


# ------------------------------------------------------------------------------- dqkit history, the widget
def test_dqkit_history_flags_the_incident_of_the_bundled_history_and_exits_1(capsys):
    root = Path(__file__).resolve().parent.parent
    code = main(["history", str(root / "data" / "history"), "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["verdict"] == "ANOMALIES"
    assert {a["metric"] for a in out["anomalies"]} >= {"status.null_share"}
    assert main(["history", str(root / "data" / "history"), "--metric", "amount.*"]) == 0


def test_the_history_system_filters_compacts_and_refuses_a_missing_history(tmp_path, capsys):
    h = History(tmp_path / "h")
    for i in range(9):
        h.append(new_run("profile", "orders", "d", {"rows": 100.0 + i % 2, "c.p50": 3.0}, START + timedelta(i)))
        h.append(new_run("profile", "users", "d", {"rows": 7.0}, START + timedelta(i)))
    assert main(["history", str(tmp_path / "h"), "--table", "users", "--compact", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [s["table"] for s in out["series"]] == ["users"] and len(h.files()) == 1
    assert main(["history", str(tmp_path / "nothing")]) == 2
    assert "no history" in capsys.readouterr().err


def test_the_quality_timeline_picks_table_column_and_metric_and_draws_the_band():
    from dqkit.widgets import QualityTimeline

    root = Path(__file__).resolve().parent.parent
    w = QualityTimeline(str(root / "data" / "history"))
    assert w.table.options == ("orders (profile)",)
    assert w.column.options[0] == "(table)" and "status" in w.column.options
    w.column.value = "status"
    w.metric.value = "null_share"
    assert w.chart.value[:4] == b"\x89PNG" and "Anomalous runs" in w.flagged.value
    frame = w.controller.timeline("orders (profile)", "status", "null_share")
    assert frame["anomalous"].tolist()[-1] and not frame["anomalous"].tolist()[:-1].count(True)
    assert frame["low"].notna().sum() == len(frame) - 7
