"""A kernel package's face that loads its backend on first use (PEP 562), so importing the package, its
constants and its manifests needs no pyspark.

Each of ``dqkit.{delta,detect,repair,dedup,lake}`` declares its public names in ``__all__`` and ends with
``__getattr__, __dir__ = lazy_face(__name__, __all__)``: a public name is looked up in the package's ``api``
module, imported the first time one is asked for. Spark-free
itself, like the rest of ``dqkit.runtime``'s package face."""
from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Sequence
from typing import Any


def lazy_face(package: str, public: Sequence[str],
              api: str = "api") -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, whose names come from ``package.api``."""
    module = importlib.import_module(package)

    names = set(public)

    def load() -> Any:
        """The api module, its public names then set on the package: a submodule of the same name
        (``dqkit.lake.sgb``, which importing the api sets on the package) gives way to the public name."""
        backend = importlib.import_module(f"{package}.{api}")
        vars(module).update({n: getattr(backend, n) for n in names if hasattr(backend, n)})
        return backend

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name not in names and importlib.util.find_spec(f"{package}.{name}") is not None:
            return importlib.import_module(f"{package}.{name}")  # a submodule: no need for the api
        try:
            return getattr(load(), name)
        except AttributeError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None

    def __dir__() -> list[str]:
        return sorted(set(vars(module)) | set(public))

    __getattr__.__doc__ = f"The public names load ``{package}.{api}`` (and pyspark) on first use, not at import."
    return __getattr__, __dir__
