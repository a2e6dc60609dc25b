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


KERNEL_FACES = ("dqkit.delta", "dqkit.detect", "dqkit.repair", "dqkit.dedup", "dqkit.lake")


def test_the_kernel_packages_faces_import_without_pyspark() -> None:
    import subprocess
    import sys

    code = ("import sys, " + ", ".join(KERNEL_FACES) + "\n"
            "assert 'pyspark' not in sys.modules, sorted(m for m in sys.modules if m.startswith('pyspark'))[:3]\n"
            "import dqkit.delta as d; assert d.plan.__name__ == 'dqkit.delta.plan'  # a submodule, not the api\n"
            "assert 'dqkit.delta.api' not in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("face", KERNEL_FACES)
def test_every_public_name_of_a_kernel_face_resolves_and_an_unknown_one_is_an_attribute_error(face: str) -> None:
    import importlib

    package = importlib.import_module(face)
    missing = [name for name in package.__all__ if not hasattr(package, name)]
    assert missing == [] and set(package.__all__) <= set(dir(package))
    with pytest.raises(AttributeError, match=f"module '{face}' has no attribute 'no_such_name'"):
        package.no_such_name  # noqa: B018


def test_no_module_is_over_500_lines_without_a_reason_on_its_first_lines() -> None:
    unexplained = []
    for path in sorted([*(ROOT / "dqkit").rglob("*.py"), *(ROOT / "widgets").rglob("*.py")]):
        lines = path.read_text(encoding="utf-8").splitlines()
        if len(lines) > 500 and not any("Long because" in line for line in lines[:5]):
            unexplained.append(f"{path.relative_to(ROOT)}: {len(lines)} lines")
    assert unexplained == [], "split it along a real seam, or say why it is long in its first lines"
