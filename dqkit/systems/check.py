"""``check_system(system)``: the registry's contract, checked on one system (as scikit-learn's
``check_estimator`` checks an estimator). A plug-in author calls it in a test; dqkit's own test suite
calls it for every built-in system.

Each check names the promise it holds a system to; the first broken one raises ``SystemCheckError``
(an ``AssertionError``, so test runners show it as a failure) naming the system and the check:

* ``params``: every ``Params`` field is declared with ``param(help=...)``, non-empty, and no name clashes
  with a global CLI flag; the example parses;
* ``round trip``: ``parse(to_parameters())`` (through JSON, as papermill passes them) and the derived CLI's
  parsing of ``to_argv()`` both give the parameters back;
* ``exit codes``: 0 and 2 are declared (1 too where the system has findings), each with a meaning, 2
  being "error";
* ``cli``: the derived subcommand exists, and ``--help`` shows its usage and states the exit codes;
  ``dqkit report NAME --list-parameters`` lists every parameter;
* on the example's result (run here from ``system.example``, paths relative to the working folder, or
  passed in as ``result``): ``sections`` (a ``Verdict`` first; every block titled and keyed; every key
  placed by a declared tab; every tab shown for every result names a section there is, or says what
  it lacks), ``result.exit_code``
  among the declared codes and the verdict's, ``render`` (text and HTML non-empty, one line of repr, the
  JSON summary serialisable) and ``escaped`` (every block's text reaches HTML escaped: the blocks are
  rendered again with markup in their titles, values and cells, and none of it may come through);
  ``metrics`` (when results have ``metrics()``: a flat mapping of names to numbers);
* ``save``: ``result.save`` into a new folder writes ``summary.json`` (the JSON summary) and
  ``report.html``, leaves nothing else beside it, and refuses to write over it again.
"""
from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import numbers
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from dqkit.systems.base import System

#: markup that must never reach a result's HTML unescaped
POISON = "<i class='dq-poison'>&amp;"


class SystemCheckError(AssertionError):
    """A system breaks the registry's contract: the message names the system and the check."""


def check_system(system: System | str, *, result: Any = None, spark: Any = None,
                 save: bool = True) -> list[str]:
    """Check that ``system`` (a ``System``, or a registered name) keeps the registry's contract; return
    the names of the checks passed, or raise ``SystemCheckError`` at the first broken one.

    ``result``: the system's result on its example, when the caller has it already (else the example
    is run here, with ``spark`` if given). ``save=False`` leaves out the save check (it writes the
    result's tables)."""
    if isinstance(system, str):
        from dqkit.systems import get

        system = get(system)
    done: list[str] = []

    def check(name: str, fn: Callable[[], None]) -> None:
        try:
            fn()
        except SystemCheckError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure of a check is the system's, reported as such
            raise SystemCheckError(f"system {system.name!r}, check {name!r}: {type(exc).__name__}: {exc}") from exc
        done.append(name)

    parsed: list[Any] = []
    check("params", lambda: parsed.append(_params(system)))
    check("round trip", lambda: _round_trip(system, parsed[0]))
    check("exit codes", lambda: _exit_codes(system))
    check("cli", lambda: _cli(system))
    if result is None:
        result = system.run(system.prepare(system.example), spark=spark)
    blocks = result.sections(sample_rows=10)
    check("sections", lambda: _sections(system, blocks))
    check("result exit code", lambda: _result_exit(system, result))
    check("render", lambda: _render(system, result))
    check("escaped", lambda: _escaped(result, blocks))
    check("metrics", lambda: _metrics(result))
    if save:
        check("save", lambda: _save(result))
    return done


def _front_end() -> tuple[Callable[[], Any], Callable[[list[str]], int]]:
    """The installed ``dqkit`` command (its console-script entry point) and its argument parser: the
    front end checked as a user's environment reaches it, not as an import of this package."""
    import sys
    from importlib.metadata import entry_points

    found = list(entry_points(group="console_scripts", name="dqkit"))
    if not found:
        raise SystemCheckError("no `dqkit` command is installed (console script entry point)")
    main = found[0].load()
    return sys.modules[main.__module__].build_parser, main


def _fail(system: System, check: str, message: str) -> SystemCheckError:
    return SystemCheckError(f"system {system.name!r}, check {check!r}: {message}")


def _params(system: System) -> Any:
    from dqkit.systems.base import GLOBAL_FLAGS

    try:
        specs = system.params.specs()
    except TypeError as exc:  # a field declared without param(help=...)
        raise _fail(system, "params", str(exc)) from None
    for s in specs:
        if not s.help.strip():
            raise _fail(system, "params", f"parameter {s.name!r} has no help text")
        if s.name in GLOBAL_FLAGS:
            raise _fail(system, "params", f"parameter {s.name!r} clashes with the global flag --{s.name}")
    if not system.summary.strip():
        raise _fail(system, "params", "the declaration has no summary")
    return system.params.parse(system.example)


def _round_trip(system: System, params: Any) -> None:
    build_parser, _ = _front_end()

    again = system.params.parse(json.loads(json.dumps(params.to_parameters())))
    assert again == params, f"parse(to_parameters()) gave {again!r}, not {params!r}"
    args = build_parser().parse_args([system.name, *params.to_argv()])
    from_cli = system.params.parse({s.name: getattr(args, s.name) for s in system.params.specs()})
    assert from_cli == params, f"the CLI parsed {params.to_argv()!r} as {from_cli!r}, not {params!r}"


def _cli(system: System) -> None:
    build_parser, main = _front_end()

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        build_parser().parse_args([system.name, "--help"])
    text = " ".join(out.getvalue().split())
    assert f"usage: dqkit {system.name}" in text, f"`dqkit {system.name} --help` printed no usage"
    assert " ".join(system.exit_text().split()) in text, "--help does not state the exit codes"
    listing = io.StringIO()
    with contextlib.redirect_stdout(listing):
        code = main(["report", system.name, "--list-parameters"])
    assert code == 0, f"`dqkit report {system.name} --list-parameters` exited {code}"
    missing = [s.name for s in system.params.specs() if s.name not in listing.getvalue()]
    assert not missing, f"the report's parameter list leaves out {', '.join(missing)}"


def _exit_codes(system: System) -> None:
    codes = system.exit_codes
    missing = [c for c in (0, 2) if c not in codes]  # 1 (findings) only where a system has findings
    assert not missing, f"exit codes {missing} are not declared"
    assert all(isinstance(t, str) and t.strip() for t in codes.values()), "an exit code has no meaning"
    assert codes[2] == "error", f"exit code 2 means {codes[2]!r}, not 'error'"


def _sections(system: System, blocks: list[Any]) -> None:
    """A Verdict first, every block titled and keyed, every key placed by a declared tab, and every tab
    that belongs to every result (no ``when``) shows something of the example or says what it lacks."""
    from dqkit.contract import result as contract

    assert blocks and isinstance(blocks[0], contract.Verdict), "sections() does not start with a Verdict"
    untitled = [type(b).__name__ for b in blocks[1:] if not str(getattr(b, "title", "")).strip()]
    assert not untitled, f"untitled sections: {', '.join(untitled)}"
    keys = [getattr(b, "key", "") for b in blocks]
    unkeyed = [f"{type(b).__name__} {getattr(b, 'title', '')!r}" for b, k in zip(blocks, keys)
               if not isinstance(k, str) or not k.strip()]
    assert not unkeyed, f"sections without a key: {', '.join(unkeyed)}"
    named = {k for tab in system.tabs for k in (*tab.keys, *tab.when)}
    if all(tab.keys for tab in system.tabs):  # no catch-all tab: each key must be placed by one
        unplaced = sorted(set(keys) - named)
        assert not unplaced, f"sections whose key no tab names: {', '.join(unplaced)}"
    for tab in system.tabs:
        if tab.keys and not tab.when and not tab.empty and not set(tab.keys) & set(keys):
            raise AssertionError(f"tab {tab.title!r} names {', '.join(tab.keys)}, none of which the example's "
                                 f"sections has ({', '.join(sorted(set(keys)))}), and says nothing when empty")


def _result_exit(system: System, result: Any) -> None:
    code = result.exit_code
    assert code in system.exit_codes, f"result.exit_code {code} is not a declared exit code"
    assert code == (0 if result.verdict.ok else 1) or code not in (0, 1), \
        f"result.exit_code {code} disagrees with the verdict ({result.verdict.label})"


def _render(system: System, result: Any) -> None:
    from dqkit.contract import render

    assert result.to_text().strip(), "to_text() is empty"
    html = result.to_html(charts=False)
    assert "<div class='dqkit'>" in html, "to_html() is not a dqkit fragment"
    assert "<script" not in html.lower(), "to_html() holds a script"
    json.loads(render.dumps(result.to_dict()))
    line = repr(result)
    assert "\n" not in line and len(line) < 300, f"repr is not one short line: {line[:80]!r}..."


def _escaped(result: Any, blocks: list[Any]) -> None:
    from dqkit.contract.result import sections_html

    poisoned = [_poisoned(b) for b in blocks]
    html = sections_html(poisoned, charts=False)
    assert "<i class='dq-poison'>" not in html and "dq-poison" in html, \
        "a section's text reaches the HTML unescaped (or is not shown at all)"


def _poisoned(block: Any) -> Any:
    """``block`` with markup added to its texts: titles, labels, notes, fact values and table cells."""
    import pandas as pd

    if not dataclasses.is_dataclass(block):
        return block
    changes: dict[str, Any] = {}
    for f in dataclasses.fields(block):
        value = getattr(block, f.name)
        if isinstance(value, str):
            changes[f.name] = POISON + value
        elif isinstance(value, pd.DataFrame):
            frame = value.copy()
            if len(frame.columns):
                frame = frame.rename(columns={frame.columns[0]: POISON + str(frame.columns[0])})
                if len(frame):
                    frame[frame.columns[0]] = [POISON + str(v) for v in frame[frame.columns[0]]]
            changes[f.name] = frame
        elif isinstance(value, Mapping):
            changes[f.name] = {POISON + str(k): POISON + str(v) for k, v in value.items()}
        elif isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
            changes[f.name] = type(value)(POISON + v for v in value)
    return dataclasses.replace(block, **changes) if changes else block


def _metrics(result: Any) -> None:
    got = result.metrics()
    assert isinstance(got, Mapping), f"metrics() returned {type(got).__name__}, not a mapping"
    bad = {k: v for k, v in got.items() if not isinstance(k, str) or isinstance(v, bool)
           or not isinstance(v, numbers.Number)}
    assert not bad, f"metrics() holds values that are not numbers named by text: {bad}"


def _save(result: Any) -> None:
    from dqkit.errors import DqkitError

    with tempfile.TemporaryDirectory(prefix="dqkit-check-") as tmp:
        target = Path(tmp) / "saved"
        where = result.save(target)
        assert Path(os.fspath(where)).resolve() == target.resolve(), f"save() says it wrote {where}, not {target}"
        beside = sorted(p.name for p in Path(tmp).iterdir())
        assert beside == ["saved"], f"save() left {beside} beside its folder (a write that is not atomic)"
        summary = json.loads((target / "summary.json").read_text(encoding="utf-8"))
        from dqkit.contract import render

        assert summary == json.loads(render.dumps(result.to_dict())), "summary.json is not the JSON summary"
        assert (target / "report.html").read_text(encoding="utf-8").strip(), "report.html is empty"
        try:
            result.save(target)
        except DqkitError:
            pass
        else:
            raise AssertionError("save() wrote over an existing folder without overwrite=True")
