"""Reproducible reports: a template notebook executed by papermill, kept as .ipynb and exported to HTML.

``run_report("delta", {"old": ..., "new": ..., "keys": "users=id"}, "reports/")`` executes
``templates/delta_report.ipynb`` with those parameters on an explicit kernel and writes
``reports/delta_report.ipynb`` (the executed notebook) and ``reports/delta_report.html`` (a clean,
self-contained page: code hidden, charts embedded, no network needed). Each file is written to a
temporary name and renamed into place, so a crash never leaves a half-written report.

A failing run (a missing path, a bad parameter value) still writes both files: papermill puts the
error at the top of the executed notebook, and the outcome carries the error's class and message.

Parameters are strings on the command line. List-like ones may be repeated and are joined: ``key``
(``-p key users=id -p key lineitem=l_orderkey,l_linenumber`` -> ``keys="users=id;lineitem=..."``),
``table`` and ``exclude`` (joined with commas). Numbers are converted when the template's default is
a number; anything else is checked inside the notebook, so the error is recorded there.
"""
from __future__ import annotations

import os
import re
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dqkit.errors import DqkitError, ParameterError, SourceError
from dqkit.session import redirect_stderr_fd

KERNEL = "python3"

#: Repeatable command-line names -> (template parameter, separator used to join repeats).
ALIASES: dict[str, tuple[str, str]] = {
    "key": ("keys", ";"), "keys": ("keys", ";"),
    "table": ("tables", ","), "tables": ("tables", ","),
    "exclude": ("exclude", ","), "exclusion": ("exclude", ","), "exclusions": ("exclude", ","),
}
#: Parameters holding local paths: made absolute so the record says exactly what was read.
PATH_PARAMETERS = ("old", "new", "output")


class ReportError(DqkitError):
    """A report notebook failed while executing; the executed notebook has the error at the top."""


@dataclass(frozen=True)
class ReportOutcome:
    """What a report run produced: the executed notebook, its HTML export, and any error."""

    notebook: Path
    html: Path
    parameters: dict[str, Any]
    seconds: float
    error: str | None = None
    error_class: str | None = None
    failed_cell: int | None = field(default=None)

    @property
    def ok(self) -> bool:
        return self.error is None

    def raise_for_error(self) -> None:
        if self.error is not None:
            raise ReportError(f"the report failed: {self.error_class}: {self.error}",
                              hint=f"the executed notebook, with the error at the top, is {self.notebook}")


# --------------------------------------------------------------------------------------------
# Parameters
# --------------------------------------------------------------------------------------------

def template_parameters(name: str) -> dict[str, dict[str, Any]]:
    """The ``parameters`` cell of template ``name``: {parameter: {default, inferred_type_name, help}}."""
    import papermill

    from dqkit.templates import template_path

    return {k: dict(v) for k, v in papermill.inspect_notebook(str(template_path(name))).items()}


def collect_parameters(pairs: Iterable[tuple[str, str]], known: Mapping[str, Mapping[str, Any]]
                       ) -> dict[str, Any]:
    """Fold ``-p NAME VALUE`` pairs into template parameters (joining repeatable ones)."""
    out: dict[str, Any] = {}
    for raw_name, value in pairs:
        name = raw_name.replace("-", "_")
        target, sep = ALIASES.get(name, (name, ""))
        if target not in known:
            raise ParameterError(f"the template has no parameter {raw_name!r}",
                                 hint=f"parameters: {', '.join(known)} (repeatable: key, table, exclude)")
        if target in out:
            if not sep:
                raise ParameterError(f"parameter {raw_name!r} is given twice", hint="give it once")
            out[target] = f"{out[target]}{sep}{value}"
        else:
            out[target] = value
    return out


def _coerce(parameters: Mapping[str, Any], known: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Convert numeric strings where the template's default is a number; make local paths absolute."""
    out: dict[str, Any] = {}
    for name, value in parameters.items():
        kind = (known.get(name) or {}).get("inferred_type_name", "None")
        if isinstance(value, str) and kind in ("float", "int"):
            try:
                value = float(value) if kind == "float" else int(value)
            except ValueError:
                pass  # left as text: the template reports it, so the record shows the error
        if name in PATH_PARAMETERS and isinstance(value, str) and value and not value.startswith("catalog:"):
            value = os.path.abspath(value)
        out[name] = value
    return out


def split_list(value: str | Sequence[str] | None, sep: str = ",") -> list[str]:
    """Split ``"a, b"`` (or take ``["a", "b"]``) into ``["a", "b"]``, dropping blank items."""
    if value is None:
        return []
    items = value.split(sep) if isinstance(value, str) else list(value)
    return [str(i).strip() for i in items if str(i).strip()]


def parse_keys(value: str | Mapping[str, Any] | None) -> dict[str, list[str]]:
    """``"users=id;lineitem=l_orderkey,l_linenumber"`` -> {table: [columns]}."""
    if isinstance(value, Mapping):
        return {str(t): split_list(c) for t, c in value.items()}
    keys: dict[str, list[str]] = {}
    for item in split_list(value, ";"):
        table, sep, cols = item.partition("=")
        names = split_list(cols)
        if not sep or not table.strip() or not names:
            raise ParameterError(f"cannot read the key {item!r}",
                                 hint="write TABLE=COL or TABLE=COL1,COL2; separate tables with ';'")
        keys[table.strip()] = names
    return keys


def delta_arguments(*, old: str, new: str, tables: str = "", keys: str = "", exclude: str = "",
                    stages: str = "dedup,row,column", abs_tol: Any = 0.0, rel_tol: Any = 0.0,
                    sample_rows: Any = 10, **_: Any) -> dict[str, Any]:
    """Check the delta template's parameters and turn them into ``dqkit.delta.delta`` arguments."""
    if not str(old).strip() or not str(new).strip():
        raise ParameterError("the report needs both versions",
                             hint="give them with -p old PATH -p new PATH")
    for label, path in (("old", old), ("new", new)):
        text = str(path).strip()
        if not text.startswith("catalog:") and not Path(text).exists():
            # Checked before Spark starts, so a bad path fails in seconds, with the path named.
            raise SourceError(f"the {label} version does not exist: {text}",
                              hint="give a database folder, a table file, or catalog:DB")
    tolerances = {}
    for name, value in (("abs_tol", abs_tol), ("rel_tol", rel_tol)):
        try:
            tolerances[name] = float(value)
        except (TypeError, ValueError):
            raise ParameterError(f"{name} must be a number, got {value!r}") from None
    if isinstance(sample_rows, bool) or not isinstance(sample_rows, int) or sample_rows < 0:
        raise ParameterError(f"sample_rows must be a whole number of rows (0 or more), got {sample_rows!r}")
    return {"old": str(old), "new": str(new), "tables": split_list(tables) or None,
            "keys": parse_keys(keys), "exclude": split_list(exclude), "stages": split_list(stages),
            **tolerances}


def environment() -> dict[str, str]:
    """Versions that make a report reproducible: dqkit, Spark, Python, pandas."""
    import pandas
    import pyspark

    from dqkit import __version__

    return {"dqkit": __version__, "pyspark": pyspark.__version__, "python": sys.version.split()[0],
            "pandas": pandas.__version__}


def command_line(name: str, parameters: Mapping[str, Any]) -> str:
    """The ``dqkit report`` command that reproduces a run with these parameters."""
    import shlex

    parts = ["dqkit", "report", name]
    for k, v in parameters.items():
        if v not in ("", None):
            parts += ["-p", k, str(v)]
    return " ".join(shlex.quote(p) for p in parts) + " -o OUTDIR"


# --------------------------------------------------------------------------------------------
# Running and exporting
# --------------------------------------------------------------------------------------------

_SCRIPTS = re.compile(r"<script\b.*?</script>|<link[^>]*\bhref=[\"']https?://[^>]*>", re.IGNORECASE | re.DOTALL)


def to_html(notebook: Any, title: str) -> str:
    """A clean, self-contained HTML page of an executed notebook: no code, no prompts, no stderr."""
    import copy

    from nbconvert import HTMLExporter

    nb = copy.deepcopy(notebook)
    for cell in nb.cells:
        if cell.get("cell_type") == "code":
            cell["outputs"] = [o for o in cell.get("outputs", [])
                               if not (o.get("output_type") == "stream" and o.get("name") == "stderr")]
    exporter = HTMLExporter(template_name="lab", exclude_input=True, exclude_input_prompt=True,
                            exclude_output_prompt=True, embed_images=True)
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": title}})
    # The report needs no JavaScript: drop the exporter's scripts (MathJax set-up, a mermaid loader that
    # would fetch from a CDN) so the page is static and opens without a network.
    return _SCRIPTS.sub("", body)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{uuid.uuid4().hex[:8]}")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def run_report(name: str, parameters: Mapping[str, Any], out_dir: str | os.PathLike, *,
               kernel_name: str = KERNEL, timeout: float | None = None) -> ReportOutcome:
    """Execute template ``name`` with ``parameters`` and write OUT/<template>.ipynb and .html.

    Unknown parameter names raise ``ParameterError`` before anything runs. A failure inside the
    notebook does not raise: both files are written (the notebook with the error at the top) and the
    outcome's ``error`` says what went wrong; call ``outcome.raise_for_error()`` to turn it into a
    ``ReportError``.
    """
    import nbformat
    import papermill
    from jupyter_client.kernelspec import NoSuchKernel
    from papermill.exceptions import PapermillExecutionError

    from dqkit.templates import template_path

    template = template_path(name)
    known = template_parameters(name)
    unknown = [k for k in parameters if k not in known]
    if unknown:
        raise ParameterError(f"the template {template.stem} has no parameter {unknown[0]!r}",
                             hint=f"parameters: {', '.join(known)}")
    params = _coerce(parameters, known)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    nb_path, html_path = out / f"{template.stem}.ipynb", out / f"{template.stem}.html"
    tmp_nb = out / f".{template.stem}.tmp-{uuid.uuid4().hex[:8]}.ipynb"
    error = error_class = None
    failed_cell = None
    t0 = time.perf_counter()
    try:
        try:
            with redirect_stderr_fd(KERNEL_LOG):
                papermill.execute_notebook(str(template), str(tmp_nb), parameters=dict(params),
                                           kernel_name=kernel_name, progress_bar=False, log_output=False,
                                           report_mode=False, execution_timeout=timeout)
        except PapermillExecutionError as exc:
            error_class, error = exc.ename, _clean(exc.evalue)
            failed_cell = exc.exec_count
        except NoSuchKernel:
            raise ReportError(f"there is no Jupyter kernel named {kernel_name!r}",
                              hint="list kernels with `jupyter kernelspec list`; `make venv` installs 'python3'"
                              ) from None
        if not tmp_nb.exists():  # pragma: no cover - papermill writes it before the first cell
            raise ReportError("the report notebook was not executed", hint=f"see {KERNEL_LOG}")
        executed = nbformat.read(tmp_nb, as_version=4)
        if error is not None:
            _error_at_top(executed, f"{error_class}: {error}")
            nbformat.write(executed, tmp_nb)
        html = to_html(executed, f"dqkit {name} report")
        _write_atomic(html_path, html)
        os.replace(tmp_nb, nb_path)
    finally:
        tmp_nb.unlink(missing_ok=True)
    return ReportOutcome(nb_path, html_path, params, round(time.perf_counter() - t0, 3),
                         error, error_class, failed_cell)


KERNEL_LOG = os.path.join(tempfile.gettempdir(), f"dqkit-report-kernel-{os.getuid() if hasattr(os, 'getuid') else 0}.log")


def _error_at_top(nb: Any, message: str) -> None:
    """Put the cause of a failure in the first cell (papermill's error banner, or a new cell)."""
    import html

    import nbformat

    text = f"\n\n<pre style='white-space:pre-wrap'>{html.escape(message)}</pre>"
    for cell in nb.cells[:1]:
        if "papermill-error-cell-tag" in cell.get("metadata", {}).get("tags", []):
            cell["source"] = cell["source"] + text
            return
    nb.cells.insert(0, nbformat.v4.new_markdown_cell("**The report failed.**" + text))


def _clean(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", str(text)).strip()


def demo_report(out_dir: str | os.PathLike = "reports") -> Path:
    """The delta report of the bundled two-version Users database (Diftong's running example).

    Writes OUT/delta_report.ipynb and OUT/delta_report.html and returns the HTML path; raises
    ``ReportError`` if the report fails.
    """
    from dqkit.data import bundled

    users = bundled("users")
    outcome = run_report("delta", {"old": str(users / "old"), "new": str(users / "new"), "keys": "users=id"},
                         out_dir)
    outcome.raise_for_error()
    return outcome.html

