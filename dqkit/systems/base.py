"""What a system declaration is: ``Params`` (typed, documented, Spark-free parsing and validation) and
``System`` (name, summary, ``Params``, ``run``, report template, widget tabs, exit-code meaning).

Every front end is derived from a declaration: the CLI subcommand (``dqkit.cli._derive``), the report
parameters (``dqkit.report``) and the widget controller (``dqkit.widgets.system``). They read the
argument names, help texts, defaults and choices from the ``Params`` fields and call the same
``Params.parse`` and ``validate``, so the three cannot drift. Nothing here imports pyspark or pandas:
parsing and validation run before any SparkSession starts.
"""
from __future__ import annotations

import dataclasses
import json
import os
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import MISSING, dataclass, field
from typing import Any, ClassVar, TypeVar

from dqkit.errors import ParameterError

P = TypeVar("P", bound="Params")
_TRUE = {"true", "1", "yes", "y", "on"}
_FALSE = {"false", "0", "no", "n", "off", ""}

#: what a field accepts besides its text (``param(accepts=...)``): the notebook-only inputs
ACCEPTS = ("table", "database", "rules", "object")


class RuleText(str):
    """Rules typed in a box, one per line (``name: a -> b``): a value of a ``rules`` field that is the
    rules themselves, not the name of a rules file."""


def is_frame(value: Any) -> bool:
    """Whether ``value`` is an in-memory table (a Spark DataFrame, classic or Connect), told without
    importing pyspark: it has a schema and a session."""
    return not isinstance(value, (str, os.PathLike)) and hasattr(value, "schema") and hasattr(value, "sparkSession")


def in_memory(value: Any, accepts: str | None) -> bool:
    """Whether ``value`` of a field that ``accepts`` notebook inputs is one of them (kept as given, never
    a path: no file check looks at it and no report or command line can carry it)."""
    if accepts is None or value is None or isinstance(value, (str, os.PathLike)):
        return isinstance(value, RuleText) and accepts == "rules"
    if isinstance(value, (list, tuple)):
        return False  # a list of values (each item is looked at on its own)
    if accepts == "table":
        return is_frame(value)
    if accepts == "database":
        return is_frame(value) or isinstance(value, Mapping)
    return True  # rules: a rule object; object: a spec, a cost model, a config or a {name: value} mapping


def param(default: Any = MISSING, *, help: str, positional: bool = False, metavar: str | None = None,
          choices: Sequence[Any] | None = None, repeat: bool = False, sep: str = ",",
          parse: Callable[[Any], Any] | None = None, fmt: Callable[[Any], Any] | None = None,
          low: float | None = None, high: float | None = None, low_open: bool = False,
          input: bool = False, aliases: Sequence[str] = (), accepts: str | None = None) -> Any:
    """A ``Params`` field with what every front end needs to show and parse it.

    ``positional``: a CLI positional argument (otherwise ``--name-with-dashes``); ``repeat``: a list
    given once per value on the command line (also split on ``sep`` anywhere); ``parse``/``fmt``: a
    conversion from text and back for types beyond str/int/float/bool/list; ``low``/``high``: the
    inclusive range of a number (``low_open``: strictly above ``low``); ``input``: a path the run
    reads, which ``--out`` must not overlap; ``aliases``: other names ``parse`` accepts (old report
    parameter names).

    ``accepts``: the notebook-only values the field takes besides its text, so that one ``Params``
    serves the CLI, the report and the widget: ``"table"`` a path, ``catalog:`` name or an in-memory
    DataFrame; ``"database"`` a folder, ``catalog:DB`` or a ``{name: table}`` mapping; ``"rules"`` rule
    files, rule objects or ``RuleText`` typed in a box; ``"object"`` a file or the loaded object itself
    (a spec, a cost model, a config mapping). Such a value is kept as given: ``validate`` skips the file
    checks of it (the run checks it), and ``to_parameters``/``to_argv`` refuse it.
    """
    if accepts is not None and accepts not in ACCEPTS:
        raise TypeError(f"accepts must be one of {', '.join(ACCEPTS)}, got {accepts!r}")
    meta = {"help": help, "positional": positional, "metavar": metavar, "choices": tuple(choices) if choices else None,
            "repeat": repeat, "sep": sep, "parse": parse, "fmt": fmt, "low": low, "high": high,
            "low_open": low_open, "input": input, "aliases": tuple(aliases), "accepts": accepts}
    if isinstance(default, (list, dict, set)):
        frozen = tuple(default) if not isinstance(default, dict) else default
        return field(default_factory=lambda: frozen, metadata=meta)
    if default is MISSING:
        return field(metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class Params:
    """Base of every system's parameters: a frozen dataclass whose fields are declared with ``param``.

    ``parse(values)`` turns text (CLI arguments, papermill parameters, widget text boxes) or typed
    values into a checked instance; ``validate()`` adds the checks that look at files (paths, rule
    syntax, schemas from Parquet footers and CSV headers, ``--out`` safety), still without Spark.
    ``to_parameters()`` and ``to_argv()`` are the inverses used by reports and tests.
    """

    _label: ClassVar[str] = "parameter"

    # ------------------------------------------------------------------ the fields, described
    @classmethod
    def specs(cls) -> list[ParamSpec]:
        """One ``ParamSpec`` per field, in declaration order."""
        hints = typing.get_type_hints(cls)
        return [ParamSpec.of(f, hints[f.name]) for f in dataclasses.fields(cls) if not f.name.startswith("_")]

    @classmethod
    def spec(cls, name: str) -> ParamSpec:
        for s in cls.specs():
            if s.name == name:
                return s
        raise ParameterError(f"unknown parameter {name!r}", hint=f"parameters: {', '.join(s.name for s in cls.specs())}")

    # ------------------------------------------------------------------ parsing (no Spark)
    @classmethod
    def parse(cls: type[P], values: Mapping[str, Any] | None = None, **more: Any) -> P:
        """A checked instance from ``values`` (names as declared; dashes accepted). Text is converted
        by the field's type; a missing required value, an unknown name, a value out of range or not
        among the choices is a ``ParameterError`` naming the parameter."""
        specs = {s.name: s for s in cls.specs()}
        alias = {a: s.name for s in specs.values() for a in s.aliases}
        given: dict[str, Any] = {}
        for k, v in {**(values or {}), **more}.items():
            name = str(k).replace("-", "_")
            given[alias.get(name, name)] = v
        unknown = sorted(set(given) - set(specs))
        if unknown:
            raise ParameterError(f"unknown parameter(s): {', '.join(unknown)}",
                                 hint=f"parameters: {', '.join(specs)}")
        kwargs: dict[str, Any] = {}
        for name, s in specs.items():
            raw = given.get(name)
            if raw is None or (s.repeat and isinstance(raw, (list, tuple)) and not raw):
                if s.required:
                    raise ParameterError(f"{s.label} is required", hint=f"{s.label}: {s.help}")
                continue
            kwargs[name] = s.convert(raw)
        return cls(**kwargs)

    def validate(self) -> None:
        """Checks that look beyond one value (files, schemas, combinations); no Spark. Override."""

    def in_memory(self, name: str) -> bool:
        """Whether field ``name`` holds a notebook-only value (a DataFrame, a mapping of tables, typed
        rules, a loaded object): file checks skip it, the run checks it."""
        spec = type(self).spec(name)  # on the class: a field may be called ``spec`` (tcfc)
        value = getattr(self, name)
        if spec.repeat and isinstance(value, tuple):
            return any(in_memory(v, spec.accepts) for v in value)
        return in_memory(value, spec.accepts)

    def inputs(self) -> list[Any]:
        """The paths this run reads (fields declared with ``input=True``), for the ``--out`` check;
        in-memory values are no paths and are left out."""
        out: list[Any] = []
        for s in self.specs():
            if s.input:
                value = getattr(self, s.name)
                if isinstance(value, (list, tuple)):
                    out += [v for v in value if v and not in_memory(v, s.accepts)]
                elif value and not in_memory(value, s.accepts):
                    out.append(value)
        return out

    def absolute(self: P) -> P:
        """A copy with every local input path absolute (``catalog:`` names kept), so a report's record
        says what was read. A system whose paths sit inside other text (``NAME=PATH``) overrides it."""
        def fix(v: Any) -> Any:
            return (os.path.abspath(v) if isinstance(v, str) and v and not v.startswith("catalog:")
                    and not isinstance(v, RuleText) else v)

        changed = {s.name: (tuple(fix(v) for v in value) if isinstance(value := getattr(self, s.name), tuple)
                            else fix(value)) for s in self.specs() if s.input}
        return dataclasses.replace(self, **changed)

    # ------------------------------------------------------------------ the inverses
    def to_parameters(self) -> dict[str, Any]:
        """JSON-ready values by name (papermill parameters; ``parse`` of them gives back ``self``)."""
        return {s.name: s.format(getattr(self, s.name)) for s in self.specs()}

    def to_argv(self) -> list[str]:
        """Command-line arguments giving back ``self`` (positionals first, then non-default options)."""
        argv: list[str] = []
        specs = self.specs()
        for s in specs:
            if s.positional:
                argv.append(str(s.format(getattr(self, s.name))))
        for s in specs:
            value = getattr(self, s.name)
            if s.positional or (not s.required and value == s.default):
                continue
            if s.kind is bool:
                argv.append(s.flag if value else f"--no-{s.flag[2:]}")
            elif s.repeat:
                for item in value:
                    argv += [s.flag, str(item)]
            elif value is not None:
                text = s.format(value)
                argv += [s.flag, text if isinstance(text, str) else json.dumps(text)]
        return argv


@dataclass(frozen=True)
class ParamSpec:
    """One parameter as the front ends see it: name, type, default, help and how to parse it."""

    name: str
    kind: Any
    optional: bool
    default: Any
    required: bool
    help: str
    positional: bool
    metavar: str | None
    choices: tuple[Any, ...] | None
    repeat: bool
    sep: str
    parser: Callable[[Any], Any] | None
    formatter: Callable[[Any], Any] | None
    low: float | None
    high: float | None
    low_open: bool
    input: bool
    aliases: tuple[str, ...] = ()
    accepts: str | None = None

    @classmethod
    def of(cls, f: dataclasses.Field, hint: Any) -> ParamSpec:
        meta = f.metadata
        if "help" not in meta:
            raise TypeError(f"Params field {f.name!r} must be declared with param(..., help=...)")
        kind, optional = _unwrap(hint)
        if f.default is not MISSING:
            default, required = f.default, False
        elif f.default_factory is not MISSING:  # type: ignore[misc]
            default, required = f.default_factory(), False  # type: ignore[misc]
        else:
            default, required = None, True
        return cls(f.name, kind, optional, default, required, meta["help"], meta["positional"], meta["metavar"],
                   meta["choices"], meta["repeat"], meta["sep"], meta["parse"], meta["fmt"], meta["low"],
                   meta["high"], meta["low_open"], meta["input"], meta.get("aliases", ()), meta.get("accepts"))

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def label(self) -> str:
        return self.name if self.positional else self.flag

    def convert(self, raw: Any) -> Any:
        """``raw`` (text or a typed value) as this parameter's type, checked against choices and range."""
        try:
            value = self._convert(raw)
        except ParameterError:
            raise
        except (TypeError, ValueError) as exc:
            raise ParameterError(f"{self.label}: cannot read {raw!r} ({exc})", hint=f"{self.label}: {self.help}") from None
        if self.choices is not None:
            for item in (value if self.repeat else [value]):
                if item not in self.choices:
                    raise ParameterError(f"{self.label} must be one of {', '.join(map(str, self.choices))}, got {item!r}")
        if self.low is not None or self.high is not None:
            self._check_range(value)
        return value

    def _convert(self, raw: Any) -> Any:
        if in_memory(raw, self.accepts) and not (self.repeat and self.accepts == "rules"):
            return dict(raw) if isinstance(raw, Mapping) else raw  # kept as given (a DataFrame, a mapping...)
        if self.parser is not None:
            return self.parser(raw)
        if self.repeat:
            items = [raw] if isinstance(raw, str) or in_memory(raw, self.accepts) else list(raw)
            out: list[Any] = []
            for item in items:
                if in_memory(item, self.accepts):
                    out.append(item)
                    continue
                parts = str(item).split(self.sep) if self.sep and isinstance(item, str) else [item]
                out += [self._scalar(p.strip() if isinstance(p, str) else p) for p in parts
                        if not (isinstance(p, str) and not p.strip())]
            return tuple(out)
        return self._scalar(raw)

    def _scalar(self, raw: Any) -> Any:
        kind = self.kind
        if isinstance(raw, str) and self.optional and raw.strip().lower() in ("none", "null"):
            return None
        if kind is bool:
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text in _TRUE:
                return True
            if text in _FALSE:
                return False
            raise ValueError("expected true or false")
        if kind is int:
            if isinstance(raw, bool):
                raise ValueError("expected a whole number")
            if isinstance(raw, float):
                if not raw.is_integer():
                    raise ValueError("expected a whole number")
                return int(raw)
            return int(str(raw).strip())
        if kind is float:
            if isinstance(raw, bool):
                raise ValueError("expected a number")
            return float(str(raw).strip()) if isinstance(raw, str) else float(raw)  # NaN: refused by the range
        if kind is str:
            return raw if isinstance(raw, str) else str(raw)
        return raw

    def _check_range(self, value: Any) -> None:
        from dqkit.checks.preflight import check_number  # the one range check, with the one wording

        for item in (value if self.repeat else [value]):
            if item is not None:
                check_number(item, self.label, low=self.low, high=self.high, low_open=self.low_open,
                             integer=self.kind is int)

    def format(self, value: Any) -> Any:
        """The JSON-ready form of ``value`` (``parse`` of it gives ``value`` back); an in-memory value has
        none (a report or a command line needs a path)."""
        if any(in_memory(v, self.accepts) for v in (value if self.repeat and isinstance(value, tuple) else [value])):
            raise ParameterError(f"{self.label} holds an in-memory value, which a report or a command line "
                                 "cannot carry", hint=f"give {self.label} as a path or catalog: name")
        if self.formatter is not None:
            return self.formatter(value)
        if isinstance(value, tuple):
            return list(value)
        return value


def _unwrap(hint: Any) -> tuple[Any, bool]:
    """(the base type, whether None is allowed) of an annotation such as ``int | None`` or ``tuple[str, ...]``."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        kind, _ = _unwrap(args[0]) if len(args) == 1 else (Any, False)
        return kind, True
    if origin in (tuple, list):
        args = [a for a in typing.get_args(hint) if a is not Ellipsis]
        return (args[0] if args else str), False
    return hint, False


#: names the derived command line keeps for its global flags: no parameter may be called so
GLOBAL_FLAGS = ("master", "remote", "checkpoint_dir", "debug", "format", "out", "overwrite", "version", "help")
#: The meaning of each exit code of a system, as its --help and the docs state it.
ExitCodes = Mapping[int, str]


class Tab(typing.NamedTuple):
    """A widget tab of a system: its ``title`` and the section ``keys`` it shows (the stable ``key`` of
    each block of a result's ``sections()``; empty: every section no other tab names).

    ``when``: keys that make the tab belong to a result: the tab is shown only for a result with a
    section under one of them (detect's New / Resolved / Persisting belong to a ``--since`` result),
    and not before a run. ``empty``: what the tab says when the result has no section for it; without
    it, a tab with nothing to show is left out for that result (a blank tab reads as broken).
    """

    title: str
    keys: tuple[str, ...] = ()
    when: tuple[str, ...] = ()
    empty: str = ""


#: A widget tab as a declaration writes it: a ``Tab``, or (title, section keys).
TabSpec = typing.Union[Tab, tuple[str, tuple[str, ...]]]


@dataclass(frozen=True)
class System:
    """One system, declared once; the CLI, ``dqkit report`` and the widget controller derive from it.

    ``run(params, *, spark, progress, cancel) -> Result``; ``template`` is the report notebook
    (``system_report``: the generic one that renders ``sections()``); ``tabs`` say which sections (by
    their stable keys) a widget shows in which tab; ``exit_codes`` what each exit code means; ``output``
    what ``--out`` keeps; ``progress_unit`` what a progress step counts, in the CLI and the widget alike.
    ``session``, ``clocked``, ``cli_guard``, ``cli_exit`` and ``emit_extra`` are optional
    hooks of the derived CLI subcommand, for a system whose run has to own its start-up (tcfc's budget
    clock) or whose command prints more than the result (detect's ``--explain``).
    """

    name: str
    summary: str
    params: type[Params]
    run: Callable[..., Any]
    description: str = ""
    template: str = "system_report"
    tabs: tuple[TabSpec, ...] = (Tab("Result"),)
    exit_codes: ExitCodes = field(default_factory=lambda: {0: "clean", 1: "findings", 2: "error"})
    output: str = "the result (summary.json, report.html and its tables)"
    #: parameters that run the system on its bundled example (relative to the repository root): the
    #: contract tests and ``--help`` examples use them
    example: Mapping[str, Any] = field(default_factory=dict)
    #: flags that print a text and exit 0 instead of running, by name (``example_config`` is
    #: ``--example-config``): (help, a function returning the text). With any, the CLI leaves the
    #: required parameters to ``Params.parse``, so the flag works alone.
    actions: Mapping[str, tuple[str, Callable[[], str]]] = field(default_factory=dict)
    #: checks of the output target that depend on the parameters, without Spark:
    #: ``check_output(params, out)`` (``out`` None when nothing is saved) raises a ``DqkitError``; the
    #: CLI calls it with ``--out`` and the report with ``output`` (dedup: --csv needs a folder)
    check_output: Callable[[Params, str | None], None] | None = None

    #: what a progress step counts: the terminal line (``dqkit SYSTEM: 3/7 UNIT done``) and the widget's
    #: status line say the same unit
    progress_unit: str = "steps"

    # -- optional hooks for the derived CLI subcommand (``dqkit.cli._derive.run_system``); the defaults
    # -- fit a system that needs none of them. A front end other than the CLI ignores them.
    #: how ``--master``/``--remote`` reach ``run``: ``"start"`` starts that SparkSession once the checks
    #: passed, before ``run``; ``"environment"`` only exports them (DQKIT_SPARK_MASTER / SPARK_REMOTE), so
    #: ``run`` starts Spark itself when and if it needs it (tcfc: inside its time budget)
    session: str = "start"
    #: ``run`` also takes ``started=`` (the ``time.monotonic()`` at which the command started,
    #: ``args.started``): a time budget whose clock counts parsing, checks and start-up too
    clocked: bool = False
    #: a context manager the CLI runs ``run`` inside (e.g. keeping file descriptor 2 across a JVM launch)
    cli_guard: Callable[[], AbstractContextManager[Any]] | None = None
    #: called by the CLI with the exit code once the output is printed (e.g. to leave the process without
    #: waiting for a background thread still starting an engine)
    cli_exit: Callable[[int], None] | None = None
    #: what the CLI prints besides the result, when a parameter asks for it (detect's ``--explain``):
    #: ``emit_extra(result, params) -> {name: text}``; each text follows the text output and is added
    #: to the JSON under its name. None (or an empty mapping): nothing extra.
    emit_extra: Callable[[Any, Params], Mapping[str, str]] | None = None

    def __post_init__(self) -> None:
        if self.session not in ("start", "environment"):
            raise TypeError(f"system {self.name!r}: session must be 'start' or 'environment', got {self.session!r}")
        object.__setattr__(self, "tabs", tuple(t if isinstance(t, Tab) else Tab(t[0], tuple(t[1]))
                                               for t in self.tabs))
        for tab in self.tabs:
            if not isinstance(tab.keys, tuple) or not all(isinstance(k, str) and k for k in tab.keys):
                raise TypeError(f"system {self.name!r}: tab {tab.title!r} must name section keys (strings)")

    def prepare(self, values: Mapping[str, Any] | None = None, **more: Any) -> Params:
        """``Params.parse`` then ``validate``: every check that needs no Spark, for every front end."""
        params = self.params.parse(values, **more)
        params.validate()
        return params

    def exit_text(self) -> str:
        """``Exit 0: ...; 1: ...; 2: ...`` for --help."""
        return "Exit " + "; ".join(f"{code}: {text}" for code, text in sorted(self.exit_codes.items())) + "."
