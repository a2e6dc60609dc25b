"""Wall-clock bounds, checked only in the ``perf`` run (``make test-perf``, on a quiet machine).

A test that promises a time bound takes the ``wall_clock`` fixture (tests/conftest.py) and runs twice: its
``behaviour`` variant (in ``make test``) asserts everything but the seconds, so a loaded machine cannot fail
it; its ``wall-clock`` variant, marked ``perf``, asserts the seconds as well."""
from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


class WallClock:
    """``with wall_clock.within(seconds, what):`` times the block; ``enforced`` asserts the bound."""

    def __init__(self, enforced: bool) -> None:
        self.enforced = enforced
        self.took: float | None = None

    @contextmanager
    def within(self, seconds: float, what: str = "the block") -> Iterator[WallClock]:
        start = time.monotonic()
        try:
            yield self
        finally:
            self.took = time.monotonic() - start
        if self.enforced:
            assert self.took < seconds, f"{what} took {self.took:.2f} s, over its bound of {seconds:g} s"
