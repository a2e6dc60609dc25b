"""One exception hierarchy for dqkit.

Every error says what was wrong, where, and what to do. Callers catch ``DqkitError``; the CLI maps it
to exit code 2. Subclasses exist so that tests and widgets can tell the classes of bad input apart.
"""
from __future__ import annotations


class DqkitError(Exception):
    """Base class of every error dqkit raises on purpose."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint
        super().__init__(message if hint is None else f"{message}\nHint: {hint}")


class SourceError(DqkitError):
    """A table or database could not be found or read (missing path, unknown catalog table)."""


class SchemaMismatchError(DqkitError):
    """Two tables that must share a schema do not; the message lists the differing columns."""


class SchemaChangeError(SchemaMismatchError):
    """``dqkit delta --schema-changes fail`` and the two versions' schemas differ; the message lists
    every change."""


class UnknownColumnError(DqkitError):
    """A column named by the user (key, exclusion, rule attribute) does not exist."""


class UnknownTableError(DqkitError):
    """A table named by the user does not exist in the source."""


class ReservedColumnError(DqkitError):
    """A user column clashes with a name dqkit adds (for example ``row_count``)."""


class UnsupportedTypeError(DqkitError):
    """A column type an operation cannot handle (for example a map column in ``calc_diff``)."""


class RuleError(DqkitError):
    """A rule that does not parse or does not fit the table; the message names rule and position."""


class ParameterError(DqkitError):
    """A parameter value that is out of range or inconsistent with the others."""


class InvalidKeyError(ParameterError):
    """A key that repeats or is NULL, so it cannot tell rows apart; the message gives the column(s),
    the number of repeated values and of NULL rows, and at most five examples."""

    def __init__(self, message: str, *, hint: str | None = None, columns: tuple[str, ...] = (),
                 repeated: int = 0, null_rows: int = 0, examples: tuple[str, ...] = ()) -> None:
        super().__init__(message, hint=hint)
        self.columns = columns
        self.repeated = repeated
        self.null_rows = null_rows
        self.examples = examples


class CancelledError(DqkitError):
    """A run was cancelled by the user; nothing was written."""


class OutputTakenError(DqkitError):
    """Another run wrote the same output while this one ran (without ``overwrite``): its output is kept
    whole and this run's result is not saved."""


class DiskFullError(DqkitError):
    """The disk filled while an output was written; nothing was written under the output's name."""


class DqkitWarning(UserWarning):
    """Base class of every warning dqkit gives on purpose (the CLI prints it as ``dqkit: warning: ...``)."""


class ClusterError(DqkitError):
    """The Spark cluster or Spark Connect server cannot run the work: its Python workers lack dqkit, or
    the server went away."""


WORKERS_LACK_DQKIT = ("the Spark cluster's Python workers cannot import dqkit (its rules, matchers and "
                      "repairs run there as Python functions)")
WORKERS_LACK_DQKIT_HINT = ("install the same dqkit version into the Python that runs the Spark Connect "
                           "server's (or the executors') Python workers - the interpreter named by "
                           "PYSPARK_PYTHON on the server - or put dqkit on their PYTHONPATH; delta, tcfc, "
                           "lake and query need no dqkit there")
SERVER_GONE = "the Spark Connect server stopped answering (it was stopped, restarted or cannot be reached)"
SERVER_GONE_HINT = "check that the server at --remote / SPARK_REMOTE runs, then rerun; nothing was saved"


def describe_error(exc: BaseException) -> str:
    """A readable one-line cause for any error, without a traceback.

    dqkit errors already say what, where and what to do (kept whole). For a Spark or Python error,
    the line naming the cause (an ``[ERROR_CLASS]`` or ``...Exception: ...`` line) is kept instead of
    the JVM stack.
    """
    import re

    if isinstance(exc, DqkitError):
        return str(exc)
    mapped = cluster_error(exc)
    if mapped is not None:
        return str(mapped)
    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    cause = next((ln for ln in lines if re.search(r"\[[A-Z_.]+\]|\w(Exception|Error): ", ln)),
                 lines[0] if lines else "")
    return f"{type(exc).__name__}: {cause.lstrip(': ')[:500]}".rstrip(": ")


_GRPC_GONE = ("StatusCode.UNAVAILABLE", "failed to connect to all addresses", "Connection refused",
              "Socket closed", "RetriesExceeded", "Connection reset", "StatusCode.CANCELLED")


def cluster_error(exc: BaseException) -> ClusterError | None:
    """A ``ClusterError`` for a Spark error that comes from the deployment, not the data: Python workers
    that cannot import dqkit, or a Spark Connect server that went away (gRPC). None otherwise."""
    text = f"{type(exc).__name__}: {exc}"
    if "ModuleNotFoundError" in text and "dqkit" in text:
        return ClusterError(WORKERS_LACK_DQKIT, hint=WORKERS_LACK_DQKIT_HINT)
    grpc_like = any(n in type(c).__name__ for c in _chain(exc)
                    for n in ("Grpc", "RpcError", "Rendezvous", "RetriesExceeded"))
    if grpc_like and any(marker in f"{c!r} {c}" for c in _chain(exc) for marker in _GRPC_GONE):
        return ClusterError(SERVER_GONE, hint=SERVER_GONE_HINT)
    return None


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and its causes/contexts (at most 10)."""
    out: list[BaseException] = []
    while exc is not None and len(out) < 10 and exc not in out:
        out.append(exc)
        exc = exc.__cause__ or exc.__context__
    return out
