"""Py4J's name lookups kept for the classic sessions dqkit starts.

Py4J resolves every ``jvm.Name``, ``package.name`` and ``JavaClass.member`` with a round trip to the
JVM, and never keeps the answer. PySpark asks for the same few dozen names on every Column operation
(``jvm.functions.col``, ``jvm.PythonUtils.toSeq``, ...). A short name found through one of PySpark's
wildcard imports also costs the JVM a failed class lookup over every jar on its class path for each
import tried before the right one (4 % of the test JVMs' CPU).

A class, an inner class and a static method stay what they are for the life of the JVM, so their
references are kept after the first answer. A static field's value can change and is never kept;
names that failed are asked again. Py4J answers "a package" for any name it cannot find as a class,
so a package is kept only under a lower-case name (``org``, ``apache``): a class name (upper case)
that is not found yet, because its jar is added later, is asked again. A ``java_import`` made later
cannot rebind a name already resolved (two classes of one simple name need their full names anyway).
"""
from __future__ import annotations

from typing import Any

from py4j.java_gateway import JavaClass, JavaMember, JavaPackage, JVMView

__all__ = ["keep_jvm_names"]


def _kept(name: str, value: Any) -> bool:
    """Whether ``value``, found under ``name``, is a reference that cannot change: a class, a static
    method, or a package under a lower-case name."""
    if isinstance(value, JavaClass):
        return True
    if isinstance(value, JavaPackage):
        return name[:1].islower()
    return isinstance(value, JavaMember) and value.container is None  # static: bound to no object


def _keep(owner: Any, name: str, value: Any) -> Any:
    if _kept(name, value):
        if type(value) is JavaClass:
            value.__class__ = _KeptJavaClass
        elif type(value) is JavaPackage:
            value.__class__ = _KeptJavaPackage
        owner.__dict__[name] = value  # found by normal attribute lookup from now on
    return value


class _KeptJavaClass(JavaClass):
    def __getattr__(self, name: str) -> Any:
        return _keep(self, name, JavaClass.__getattr__(self, name))


class _KeptJavaPackage(JavaPackage):
    def __getattr__(self, name: str) -> Any:
        return _keep(self, name, JavaPackage.__getattr__(self, name))


class _KeptJVMView(JVMView):
    def __getattr__(self, name: str) -> Any:
        return _keep(self, name, JVMView.__getattr__(self, name))


def keep_jvm_names(jvm: Any) -> bool:
    """Make ``jvm`` (a session's ``JVMView``) keep the classes, packages and static methods it
    resolves; True when it does. Anything but py4j's own ``JVMView`` is left alone."""
    if type(jvm) is JVMView:
        jvm.__class__ = _KeptJVMView
    return isinstance(jvm, _KeptJVMView)
