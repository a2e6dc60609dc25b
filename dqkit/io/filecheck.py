"""Files dqkit reads back (specs, rule files, configs, state it wrote itself), read with their checks.

``read_text`` / ``load_json`` / ``load_yaml`` turn a missing, unreadable, empty, binary or non-UTF-8
file, a truncated or malformed document, a document of the wrong shape or a state of another version
into the caller's ``DqkitError`` subclass: one message naming the file and what is wrong, and a hint
saying what to do (delete it, rerun without ``--reuse``, fix the line named). Nothing here needs a
JVM, so every command can run these checks before a SparkSession starts, and a parameter registry
can call them without Spark.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from dqkit.errors import DqkitError, ParameterError

ErrorType = type[DqkitError]


def _fail(error: ErrorType, message: str, hint: str | None) -> DqkitError:
    return error(message, hint=hint)


def read_text(path: str | os.PathLike, what: str, *, error: ErrorType = ParameterError, hint: str | None = None,
              allow_empty: bool = False) -> str:
    """The UTF-8 text of ``path`` (a leading BOM dropped); ``what`` names the file's role ("the TCFC spec").

    Refused: a path that does not exist or is a folder, an unreadable file, an empty (or blank) file
    unless ``allow_empty``, binary content (NUL bytes) and bytes that are not UTF-8."""
    p = Path(os.fspath(path))
    if not p.exists():
        raise _fail(error, f"cannot read {what} {p}: it does not exist", hint)
    if p.is_dir():
        raise _fail(error, f"{what} {p} is a folder, not a file", hint)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise _fail(error, f"cannot read {what} {p}: {exc.strerror or exc}", hint) from None
    if not allow_empty and not data.strip():
        raise _fail(error, f"{what} {p} is empty", hint)
    if b"\x00" in data[:65536]:  # a NUL byte: binary (checked before decoding, which would fail first)
        raise _fail(error, f"{what} {p} is binary, not text (a NUL byte at byte {data.index(0) + 1})", hint)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _fail(error, f"{what} {p} is not UTF-8 text (byte {exc.start + 1} cannot be decoded)", hint) from None
    if "\x00" in text:
        raise _fail(error, f"{what} {p} is binary, not text (a NUL byte at byte {data.index(0) + 1})", hint)
    return text


def load_json(path: str | os.PathLike, what: str, *, error: ErrorType = ParameterError, hint: str | None = None,
              version: int | None = None) -> dict[str, Any]:
    """The JSON object in ``path``, after ``read_text``'s checks; a truncated or malformed document, a
    document that is not an object, or (with ``version``) a ``"version"`` other than ``version`` is refused."""
    text = read_text(path, what, error=error, hint=hint)
    p = Path(os.fspath(path))
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        rest = text[exc.pos:].rstrip()  # nothing after the error, or a string never closed: cut short
        cut = not rest or (exc.msg.startswith("Unterminated string") and '"' not in rest[1:])
        state = "truncated" if cut else "not valid JSON"
        raise _fail(error, f"{what} {p} is {state} (line {exc.lineno}, column {exc.colno}: {exc.msg})", hint) from None
    except RecursionError:
        raise _fail(error, f"{what} {p} is nested too deeply to be a dqkit file", hint) from None
    if not isinstance(doc, dict):
        raise _fail(error, f"{what} {p} holds a JSON {_json_kind(doc)}, not an object", hint)
    if version is not None and doc.get("version") != version:
        got = doc.get("version")
        raise _fail(error, f"{what} {p} has version {got!r}; this dqkit reads version {version}"
                    if got is not None else f"{what} {p} has no version field (expected version {version})", hint)
    return doc


def load_yaml(path: str | os.PathLike, what: str, *, error: ErrorType = ParameterError,
              hint: str | None = None) -> Any:
    """The YAML (or JSON: YAML is a superset) document in ``path``, after ``read_text``'s checks; a
    document that does not parse is refused with its line and column."""
    import yaml

    text = read_text(path, what, error=error, hint=hint)
    p = Path(os.fspath(path))
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        what_is = exc.problem or exc.context or "invalid YAML"
        raise _fail(error, f"{what} {p} is not valid YAML/JSON{where}: {what_is}", hint) from None
    except (yaml.YAMLError, RecursionError) as exc:
        raise _fail(error, f"{what} {p} is not valid YAML/JSON: {str(exc).splitlines()[0] if str(exc) else exc!r}",
                    hint) from None


def _json_kind(doc: Any) -> str:
    return {list: "list", str: "string", bool: "boolean", type(None): "null", int: "number",
            float: "number"}.get(type(doc), type(doc).__name__)


def require(cond: bool, error: ErrorType, path: str | os.PathLike, what: str, problem: str, hint: str | None) -> None:
    """Refuse ``path`` with ``problem`` unless ``cond``: the shape checks of a document read back."""
    if not cond:
        raise _fail(error, f"{what} {os.fspath(path)} is damaged: {problem}", hint)
