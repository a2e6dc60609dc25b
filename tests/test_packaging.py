"""The install lists every package of dqkit, so a fresh install is the code the tests ran."""
from __future__ import annotations

import pathlib

import pytest

tomllib = pytest.importorskip("tomllib", reason="tomllib needs Python 3.11")

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_every_dqkit_package_is_listed_in_pyproject() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    found = {
        ".".join(path.parent.relative_to(ROOT).parts)
        for path in (ROOT / "dqkit").rglob("__init__.py")
        if "__pycache__" not in path.parts and not any(p in ("templates", "widgets", "data") for p in path.relative_to(ROOT / "dqkit").parts[:1])
    }
    missing = sorted(found - listed)
    assert not missing, f"pyproject.toml [tool.setuptools] packages lacks {missing}"


def test_every_folder_given_package_data_is_a_listed_package() -> None:
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    missing = sorted(set(setuptools["package-data"]) - set(setuptools["packages"]))
    assert not missing, f"package-data names folders the install leaves out: {missing}"
