"""The optional CLI hooks of a system declaration (``dqkit.systems.base.System``): ``session``,
``clocked``, ``cli_guard``, ``cli_exit`` and ``progress_unit``. A made-up system that uses them all shows
the derived subcommand honours them for any system, not for a name (tcfc is the one that needs them).
No test here starts Spark: ``dqkit.runtime.session.get_spark`` is replaced by a recorder."""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import Any

import pytest

from dqkit.cli import main
from dqkit.systems import Params, System, param, register, unregister


@dataclass(frozen=True)
class ClockParams(Params):
    label: str = param("x", help="a label echoed in the result")


def _result(label: str, started: float | None) -> Any:
    from dqkit.contract.result import Facts, Result, Verdict

    @dataclass(frozen=True, repr=False)
    class Clocked(Result):
        label: str
        started: float | None
        system = "clock"

        def to_dict(self) -> dict[str, Any]:
            return {"label": self.label, "started": self.started}

        def sections(self, sample_rows: int = 10) -> list[Any]:
            return [Verdict(True, "DONE", self.label), Facts("Clock", {"started": self.started})]

        def frames(self, **options: Any) -> dict[str, Any]:
            return {}

        def close(self) -> None:
            EVENTS.append("close")

        def __repr__(self) -> str:
            return f"<clock {self.label}>"

    return Clocked(label, started)


EVENTS: list[Any] = []


def _run(params: ClockParams, *, spark: Any = None, progress: Any = None, cancel: Any = None,
         started: float | None = None) -> Any:
    EVENTS.append(("run", started))
    return _result(params.label, started)


@contextlib.contextmanager
def _guard():
    EVENTS.append("guard in")
    yield
    EVENTS.append("guard out")


def _system(**hooks: Any) -> System:
    return System(name="clock", summary="a system that records its CLI hooks", params=ClockParams, run=_run, **hooks)


@pytest.fixture
def spark_calls(spark_calls, monkeypatch):
    """conftest's ``spark_calls``, with no master or remote in the environment and the events cleared."""
    for name in ("SPARK_REMOTE", "DQKIT_SPARK_MASTER"):  # set then removed: what the test sets is undone
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    EVENTS.clear()
    yield spark_calls
    unregister("clock")


def test_hooks_are_called_in_order_around_the_run_and_the_result_is_closed(spark_calls, capsys, monkeypatch):
    import dqkit.cli

    register(_system(session="environment", clocked=True, cli_guard=_guard,
                     cli_exit=lambda code: EVENTS.append(("exit", code))))
    parser_built: list[float] = []
    build = dqkit.cli.build_parser

    def slow_build():  # the command's own start-up, which a clocked run must count
        parser_built.append(time.monotonic())
        time.sleep(0.2)
        return build()

    monkeypatch.setattr(dqkit.cli, "build_parser", slow_build)
    before = time.monotonic()
    assert main(["--master", "local[1]", "clock", "--label", "hello"]) == 0
    assert "DONE" in capsys.readouterr().out
    (_, started), *rest = [e for e in EVENTS if e != "guard in"]
    assert EVENTS[0] == "guard in" and rest == ["guard out", "close", ("exit", 0)]
    assert started is not None and before <= started <= parser_built[0]  # main's clock, not the run's
    assert spark_calls == []  # "environment": no session started up front


def test_environment_session_exports_master_or_remote_instead_of_starting_spark(spark_calls, monkeypatch):
    import os

    register(_system(session="environment"))
    assert main(["--master", "local[1]", "clock"]) == 0
    assert os.environ.get("DQKIT_SPARK_MASTER") == "local[1]" and spark_calls == []
    assert main(["--remote", "sc://nowhere:15002", "clock"]) == 0
    assert os.environ.get("SPARK_REMOTE") == "sc://nowhere:15002" and spark_calls == []


def test_the_default_session_starts_spark_before_the_run_and_passes_no_clock(spark_calls, capsys):
    register(_system())
    assert main(["--master", "local[1]", "clock"]) == 2  # the recorder refuses to start Spark
    assert spark_calls and spark_calls[0][1].get("master") == "local[1]" and EVENTS == []
    assert main(["clock"]) == 0  # no --master: nothing started up front; run gets no started=
    assert EVENTS[0] == ("run", None) and "guard in" not in EVENTS


def test_an_unknown_session_mode_is_refused_at_declaration():
    with pytest.raises(TypeError, match="session must be"):
        _system(session="later")
