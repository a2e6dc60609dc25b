"""Snapshot support for the test suite: ``--update-snapshots`` (or ``DQKIT_UPDATE_SNAPSHOTS=1``) and one
result per system's bundled example per test session, shared by the registry contract tests and the
snapshot tests so no example runs twice on one worker."""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
UPDATE_ENV = "DQKIT_UPDATE_SNAPSHOTS"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-snapshots", action="store_true", default=False,
                     help=f"rewrite tests/snapshots/ from the current results (or set {UPDATE_ENV}=1)")


@pytest.fixture(scope="session")
def update_snapshots(request: pytest.FixtureRequest) -> bool:
    """True only when asked for explicitly: snapshots are never rewritten silently."""
    return bool(request.config.getoption("--update-snapshots")) or os.environ.get(UPDATE_ENV) == "1"


@pytest.fixture(scope="session")
def example_result(spark: Any) -> Callable[[str], Any]:
    """``example_result(name)``: the ``Result`` of the registered system ``name`` on its bundled example,
    computed once per session (paths in the examples are relative to the repository root)."""
    from dqkit.systems import get

    done: dict[str, Any] = {}

    def run(name: str) -> Any:
        if name not in done:
            system = get(name)
            cwd = os.getcwd()
            os.chdir(ROOT)
            try:
                done[name] = system.run(system.prepare(system.example), spark=spark)
            finally:
                os.chdir(cwd)
        return done[name]

    return run
