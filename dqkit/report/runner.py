"""Reproducible reports: a template notebook executed by papermill, kept as .ipynb and exported to HTML.

A report is a registered system's (``dqkit.systems``): its parameters come from its ``Params`` and its
report is the one shared template ``system_report``, whose cells render the result's sections, so
``run_report("delta", {"old": ..., "new": ..., "key": ["users=id"]}, "reports/")`` checks the parameters
with the delta declaration, executes ``templates/system_report.ipynb`` on an explicit kernel and writes
``reports/delta_report.ipynb`` (the executed notebook) and ``reports/delta_report.html`` (code hidden,
charts embedded, no network needed).
Each file is written to a temporary name and renamed into place, so a crash never leaves a
half-written report. A template's cells render ``result.sections()`` (``show_result``), so the report
says what ``to_html()`` and the widgets say.

Bad parameters (a missing path, an unknown column, a rule file that does not parse, a number out of
range, an output folder inside an input) are refused by the system's ``Params`` before papermill starts
a kernel (``System.prepare``: no Spark). A run that still fails inside the kernel writes nothing to the
output folder: the executed notebook, with the error at the top, is kept in a temporary folder named
by the outcome (and by ``dqkit report`` on stderr), and no HTML page with a traceback is ever made.
"""
from __future__ import annotations

import os
import re
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dqkit.runtime.atomic import atomic_files, sweep
from dqkit.errors import DqkitError, ParameterError

KERNEL = "python3"


class ReportError(DqkitError):
    """A report notebook failed while executing; the executed notebook has the error at the top."""


@dataclass(frozen=True)
class ReportOutcome:
    """What a report run produced: the executed notebook, its HTML export, and any error."""

    notebook: Path
    html: Path | None
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
                              hint=f"nothing was written to the output folder; the executed notebook, with "
                                   f"the error at the top, is {self.notebook}")


# --------------------------------------------------------------------------------------------
# Parameters
# --------------------------------------------------------------------------------------------

#: The parameters every system report takes besides its system's own (the shared Parameters block).
REPORT_OPTIONS = {"output": {"default": "", "inferred_type_name": "str",
                             "help": "folder to save the result in (empty: not saved)"}}


def report_names() -> list[str]:
    """Every report: one per registered system."""
    from dqkit.systems import all_systems

    return [s.name for s in all_systems()]


def template_parameters(name: str) -> dict[str, dict[str, Any]]:
    """The parameters of report ``name``: {parameter: {default, inferred_type_name, help}}, from the
    system's ``Params`` (the one declaration), and ``output``."""
    from dqkit.systems import get

    out = {}
    for s in get(name).params.specs():
        kind = getattr(s.kind, "__name__", "str")
        out[s.name] = {"default": s.format(s.default) if not s.required else None,
                       "inferred_type_name": "list" if s.repeat else kind,
                       "help": s.help + (" (required)" if s.required else "")
                               + (" (repeat -p for more)" if s.repeat else "")}
    return {**out, **REPORT_OPTIONS}


def collect_parameters(pairs: Iterable[tuple[str, str]], known: Mapping[str, Mapping[str, Any]],
                       name: str = "delta") -> dict[str, Any]:
    """Fold ``-p NAME VALUE`` pairs into report ``name``'s parameters: a repeatable parameter collects
    a list, others are given once."""
    from dqkit.systems import get

    system = get(name)
    specs = {s.name: s for s in system.params.specs()}
    alias = {a: s.name for s in specs.values() for a in s.aliases}
    out: dict[str, Any] = {}
    for raw_name, value in pairs:
        pname = raw_name.replace("-", "_")
        pname = alias.get(pname, pname)
        if pname not in known:
            raise ParameterError(f"the {system.name} report has no parameter {raw_name!r}",
                                 hint=f"parameters: {', '.join(known)}")
        if pname in specs and specs[pname].repeat:
            out.setdefault(pname, []).append(value)
        elif pname in out:
            raise ParameterError(f"parameter {raw_name!r} is given twice", hint="give it once")
        else:
            out[pname] = value
    return out


def prepare_report(system: str, params: Mapping[str, Any]) -> tuple[Any, Any]:
    """(the system, its checked ``Params``) for a report notebook's first cell: the same parsing and
    validation as the CLI and the widget."""
    from dqkit.runtime.inputsize import expect_inputs
    from dqkit.systems import get

    declared = get(system)
    checked = declared.prepare(params)
    # as the CLI does: a report over tiny local inputs starts its kernel's JVM for a short life (C1 only,
    # serial GC, no adaptive execution or whole-stage code: dqkit.runtime.session.get_spark)
    expect_inputs(checked.inputs())
    return declared, checked


def report_heading(system: Any, params: Any) -> None:
    """Display the report's title and what the system does (escaped)."""
    from IPython.display import HTML, display

    from dqkit.contract import render

    display(HTML(render.HTML_STYLE + f"<h1>dqkit {render.esc(system.name)} report</h1>"
                 f"<p>{render.esc(system.description or system.summary)}</p>"))


def report_record(system: Any, params: Any, result: Any, started: Any, seconds: float, output: str = "",
                  report_dir: str = "") -> None:
    """Display the reproducibility record: parameters, run, versions and the command that reproduces it."""
    from IPython.display import HTML, display

    from dqkit.contract import render
    from dqkit.contract.result import Facts, sections_html
    from dqkit.runtime.session import get_spark, is_connect

    spark = get_spark()
    values = {k: (", ".join(map(str, v)) if isinstance(v, list) else v) for k, v in params.to_parameters().items()}
    record = {"executed at (UTC)": started.strftime("%Y-%m-%d %H:%M:%S"), "run time (s)": f"{seconds:.1f}",
              **{f"{k} version": v for k, v in environment().items()},
              "Spark master": "Spark Connect" if is_connect(spark) else spark.conf.get("spark.master", "?"),
              "saved to": output or "(not saved)"}
    argv = [("-p", s.name, str(item)) for s in params.specs() if getattr(params, s.name) != s.default or s.required
            for item in (getattr(params, s.name) if s.repeat else [s.format(getattr(params, s.name))])]
    command = command_line(system.name, {}, report_dir or None, pairs=[(n, v) for _, n, v in argv]
                           + ([("output", output)] if output else []))
    display(HTML(render.HTML_STYLE + sections_html([
        Facts("Parameters", values), Facts("Run", record), Facts("Reproduce with", {"command": command})])))


def show_result(result: Any, sample_rows: int = 10) -> None:
    """Display a result's sections in a notebook: the same blocks as ``result.to_html()``."""
    from IPython.display import HTML, display

    from dqkit.contract import render
    from dqkit.contract.result import sections_html

    display(HTML(render.HTML_STYLE + sections_html(result.sections(sample_rows=sample_rows))))


def environment() -> dict[str, str]:
    """Versions that make a report reproducible: dqkit, Spark, Python, pandas."""
    import pandas
    import pyspark

    from dqkit import __version__

    return {"dqkit": __version__, "pyspark": pyspark.__version__, "python": sys.version.split()[0],
            "pandas": pandas.__version__}


def command_line(name: str, parameters: Mapping[str, Any], out_dir: str | os.PathLike | None = None, *,
                 pairs: Iterable[tuple[str, str]] = ()) -> str:
    """The ``dqkit report`` command that reproduces a run with these parameters (and output folder)."""
    import shlex

    parts = ["dqkit", "report", name]
    for k, v in [*parameters.items(), *pairs]:
        if v not in ("", None):
            parts += ["-p", k, str(v)]
    parts += ["-o", os.fspath(out_dir) if out_dir else "OUTDIR"]
    return " ".join(shlex.quote(p) for p in parts)


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
            cell["outputs"] = [o for o in cell.get("outputs", []) if o.get("output_type") != "error"
                               and not (o.get("output_type") == "stream" and o.get("name") == "stderr")]
    exporter = HTMLExporter(template_name="lab", exclude_input=True, exclude_input_prompt=True,
                            exclude_output_prompt=True, embed_images=True)
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": title}})
    # The report needs no JavaScript: drop the exporter's scripts (MathJax set-up, a mermaid loader that
    # would fetch from a CDN) so the page is static and opens without a network.
    return _SCRIPTS.sub("", body)


def run_report(name: str, parameters: Mapping[str, Any], out_dir: str | os.PathLike, *,
               kernel_name: str = KERNEL, timeout: float | None = None) -> ReportOutcome:
    """Execute system ``name``'s report with ``parameters`` and write OUT/NAME_report.ipynb and .html.

    Unknown parameter names raise ``ParameterError`` before anything runs. A failure inside the
    notebook does not raise: both files are written (the notebook with the error at the top) and the
    outcome's ``error`` says what went wrong; call ``outcome.raise_for_error()`` to turn it into a
    ``ReportError``.
    """
    import nbformat
    import papermill
    from jupyter_client.kernelspec import NoSuchKernel
    from papermill.exceptions import PapermillExecutionError

    from dqkit.runtime.session import redirect_stderr_fd
    from dqkit.systems import get

    template, params = _declared_parameters(get(name), parameters, out_dir)
    stem = f"{name}_report"
    out = Path(out_dir)
    nb_path, html_path = out / f"{stem}.ipynb", out / f"{stem}.html"
    sweep(html_path)  # a killed report's commit is finished (or its temporaries removed) before this one runs
    work = Path(tempfile.mkdtemp(prefix=f"dqkit-{name}-report-"))  # outside OUT: a failure leaves OUT as it was
    tmp_nb = work / f"{stem}.ipynb"
    error = error_class = None
    failed_cell = None
    t0 = time.perf_counter()
    try:
        with redirect_stderr_fd(KERNEL_LOG):
            papermill.execute_notebook(str(template), str(tmp_nb), parameters=dict(params),
                                       kernel_name=kernel_name, progress_bar=False, log_output=False,
                                       report_mode=False, execution_timeout=timeout)
    except PapermillExecutionError as exc:
        error_class, error = exc.ename, _clean(exc.evalue)
        failed_cell = exc.exec_count
    except NoSuchKernel:
        _remove_tree(work)
        raise ReportError(f"there is no Jupyter kernel named {kernel_name!r}",
                          hint="list kernels with `jupyter kernelspec list`; `make venv` installs 'python3'") from None
    except BaseException:
        _remove_tree(work)
        raise
    seconds = round(time.perf_counter() - t0, 3)
    if not tmp_nb.exists():  # pragma: no cover - papermill writes it before the first cell
        _remove_tree(work)
        raise ReportError("the report notebook was not executed", hint=f"see {KERNEL_LOG}")
    executed = nbformat.read(tmp_nb, as_version=4)
    if error is not None:  # kept for diagnosis outside OUT; no HTML is made of a failed run
        _error_at_top(executed, f"{error_class}: {error}")
        nbformat.write(executed, tmp_nb)
        return ReportOutcome(tmp_nb, None, params, seconds, error, error_class, failed_cell)
    try:
        html = to_html(executed, f"dqkit {name} report")
        out.mkdir(parents=True, exist_ok=True)
        # the page and the notebook land together (one journaled commit); the work folder may be on
        # another file system
        atomic_files({html_path: lambda tmp: tmp.write_text(html, encoding="utf-8"),
                      nb_path: lambda tmp: _copy(tmp_nb, tmp)})
    finally:
        _remove_tree(work)
    return ReportOutcome(nb_path, html_path, params, seconds)


def _declared_parameters(system: Any, parameters: Mapping[str, Any], out_dir: str | os.PathLike
                         ) -> tuple[Path, dict[str, Any]]:
    """(the template, papermill's parameters) of a registered system: its ``Params`` checked without
    Spark (``System.prepare``), paths made absolute, OUTDIR and ``output`` clear of every input."""
    from dqkit.checks import preflight as pf
    from dqkit.templates import template_path

    values = dict(parameters)
    output = str(values.pop("output", "") or "")
    params = system.prepare(values)
    params = params.absolute()  # the record names what was read, wherever the kernel runs
    pf.check_out(out_dir, params.inputs(), overwrite=True)  # a report folder is reused; never an input
    if system.check_output is not None:
        system.check_output(params, output or None)
    if output:
        output = os.path.abspath(output)
        pf.check_out(output, params.inputs(), overwrite=False)
    return template_path(system.template), {"system": system.name, "params": params.to_parameters(),
                                            "output": output, "report_dir": str(Path(out_dir).resolve())}


def _copy(src: Path, dst: Path) -> None:
    import shutil

    shutil.copyfile(src, dst)


def _remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


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

