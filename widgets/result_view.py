"""ResultView: any dqkit result's ``sections()`` in tabs; ExplorerBase: the run/cancel/progress plumbing.

Every explorer shows its result through ``ResultView``, so a widget says what ``to_html()`` and the
report say. ``ExplorerBase`` binds a ``RunController`` to a Run button, a ``SparkProgress`` bar with
Cancel, an error line and a ``ResultView``.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ipywidgets as W

from dqkit.contract import render
from dqkit.contract.result import Chart, _titled
from dqkit.systems import Tab
from dqkit.widgets.controllers import RunController
from dqkit.widgets.progress import SparkProgress

#: what a tab shows before a run, while one runs and after a cancel
NO_RESULT = render.wrap("<p class='muted'>No result yet: press Run.</p>")


def wrap(body: str) -> str:
    return render.wrap(body)


def as_tabs(tabs: Sequence[Any]) -> list[Tab]:
    """Tab specs as ``Tab``s (a declaration may write ``(title, keys)``)."""
    return [t if isinstance(t, Tab) else Tab(t[0], tuple(t[1])) for t in tabs]


def route(tabs: Sequence[Tab], blocks: Sequence[Any]) -> tuple[list[Tab], list[list[Any]]]:
    """The tabs ``blocks`` are shown in, and each tab's blocks, by the blocks' section keys only.

    A block goes to the first tab naming its key, else to the first tab naming none (the rest), else
    to the last tab: no section is lost. A tab with ``when`` keys belongs only to a result with a
    section under one of them; a tab left with no block is left out unless it says what ``empty`` means.
    """
    keys = {getattr(b, "key", "") for b in blocks}
    candidates = [t for t in tabs if not t.when or keys & set(t.when)] or list(tabs[:1])
    groups: list[list[Any]] = [[] for _ in candidates]
    rest = [i for i, t in enumerate(candidates) if not t.keys]
    for block in blocks:
        key = getattr(block, "key", "")
        named = [i for i, t in enumerate(candidates) if key in t.keys]
        groups[(named or rest or [len(candidates) - 1])[0]].append(block)
    shown = [i for i, t in enumerate(candidates) if groups[i] or t.empty] or [0]
    return [candidates[i] for i in shown], [groups[i] for i in shown]


class ResultView(W.Tab):
    """A result's sections in tabs, routed by their stable section keys (``dqkit.systems.Tab``).

    ``tabs`` are a system's declared tabs (one tab with everything by default). Before a run the view
    shows the tabs that belong to every result; a result shows the tabs it has sections for (see ``route``).
    """

    def __init__(self, tabs: Sequence[Any] = (Tab("Result"),), sample_rows: int = 10) -> None:
        self.declared = as_tabs(tabs)
        self.shown = [t for t in self.declared if not t.when] or self.declared[:1]
        self.sample_rows = sample_rows
        self.result: Any = None
        #: per shown tab, the section keys of the blocks it shows (empty before a run)
        self.shown_keys: list[list[str]] = [[] for _ in self.shown]
        self._charts: dict[tuple[str, str], str] = {}  # the shown result's drawn charts, by (name, title)
        super().__init__(children=[W.HTML(NO_RESULT) for _ in self.shown])
        self._set_titles()

    @property
    def tab_titles(self) -> list[str]:
        """The titles of the tabs shown now."""
        return [t.title for t in self.shown]

    def _set_titles(self) -> None:
        for i, tab in enumerate(self.shown):
            self.set_title(i, tab.title)

    def _retab(self, tabs: list[Tab]) -> None:
        """Rebuild the tabs when a result needs other ones (the same tabs: nothing to do)."""
        if tabs == self.shown:
            return
        self.shown = tabs
        self.children = [W.HTML(NO_RESULT) for _ in tabs]
        self._set_titles()

    def show(self, result: Any) -> None:
        """Render ``result.sections()`` into the tabs. Showing the same result again (another page of
        rows, ``set_sample_rows``) redraws no chart: each is drawn once per result."""
        if result is not self.result:
            self.result, self._charts = result, {}
        tabs, groups = route(self.declared, result.sections(sample_rows=self.sample_rows))
        self._retab(tabs)
        self.shown_keys = [[getattr(b, "key", "") for b in blocks] for blocks in groups]
        for child, tab, blocks in zip(self.children, tabs, groups):
            child.value = render.HTML_STYLE + (self._html(blocks) if blocks else
                                               wrap(f"<p class='muted'>{render.esc(tab.empty or 'Nothing to show.')}</p>"))
        self.selected_index = 0

    def set_sample_rows(self, n: int) -> None:
        """Show the current result with ``n`` rows per sample table (paging through a result's samples).
        The results keep what they fetched (``DetectionResult.sample_rows``, dedup's and delta's samples),
        so a page within what was fetched runs no Spark job, and no chart is drawn again."""
        self.sample_rows = int(n)
        if self.result is not None:
            self.show(self.result)

    def _html(self, blocks: Sequence[Any]) -> str:
        """``sections_html`` of ``blocks``, each chart of the shown result drawn once."""
        parts = []
        for block in blocks:
            if isinstance(block, Chart):
                key = (block.name, block.title)
                if key not in self._charts:
                    self._charts[key] = _titled(block)
                parts.append(self._charts[key])
            else:
                parts.append(_titled(block))
        return "<div class='dqkit'>" + "".join(parts) + "</div>"

    def clear(self) -> None:
        """No result: the tabs shown before a run, each saying so (a blank tab reads as broken)."""
        self.result, self._charts = None, {}
        self._retab([t for t in self.declared if not t.when] or self.declared[:1])
        self.shown_keys = [[] for _ in self.shown]
        for child in self.children:
            child.value = NO_RESULT


class ExplorerBase(W.VBox):
    """Run button, progress with Cancel, error line and result view around a ``RunController``.

    The run states, the same in every explorer: from the click on Run until the result (or the error)
    is shown, Run is disabled and Cancel is enabled and coloured; Cancel clears the pending view at once
    (``clear_results``) and is disabled until the run has ended; a new run starts from an empty view, so
    no result of an earlier run is left standing. Before any run and after one, Cancel is neutral and
    disabled. Subclasses with views of their own beyond ``view`` extend ``clear_results``.
    """

    def _build_run_controls(self, controller: RunController, view: ResultView) -> None:
        self.controller = controller
        self.view = view
        self.run_button = W.Button(description="Run", icon="play", button_style="primary")
        self.run_button.on_click(lambda _: self.start())
        self.progress = SparkProgress()
        self.progress.on_cancel = self.cancel
        self.message = W.HTML()
        self._cancel_requested = False
        controller.on_change(self._on_run_change)

    @property
    def tabs(self) -> ResultView:
        return self.view

    @property
    def result(self) -> Any:
        return self.controller.result

    @property
    def error(self) -> str | None:
        return self.controller.error

    @property
    def status(self) -> str:
        return self.controller.status

    def run(self, timeout: float | None = None) -> Any:
        """Run with the current selections and wait; errors show in the widget (and ``.error``)."""
        self.start()
        self.controller.wait(timeout)
        return self.result

    def start(self) -> None:
        """Start a run in the background (what the Run button does)."""
        if self.controller.status == "running":
            return
        self._cancel_requested = False
        self.message.value = ""
        self.clear_results()
        self._show_running()
        try:
            run = self.controller.start()
        except Exception as exc:  # a refusal before the run: shown, and Run is usable again
            self._show_idle()
            self._show_error(str(exc))
            return
        self.progress.run = run

    def cancel(self) -> None:
        """What Cancel does: clear the pending view at once, then stop the run (it ends by itself)."""
        if self.controller.status != "running":
            return
        self._cancel_requested = True
        self.clear_results()
        self.progress.cancelling()
        self.controller.cancel()

    def show_result(self, result: Any) -> None:
        """Show a finished run's result (the tabs here; subclasses add their own views). Run is enabled
        only after this has returned."""
        self.view.show(result)

    def clear_results(self) -> None:
        """Empty every view that shows a run's outcome (the tabs here; subclasses add their own)."""
        self.view.clear()

    def _show_running(self) -> None:
        self.run_button.disabled, self.run_button.button_style = True, ""
        self.progress.begin()

    def _show_idle(self) -> None:
        self.run_button.disabled, self.run_button.button_style = False, "primary"
        self.progress.cancel_button.disabled, self.progress.cancel_button.button_style = True, ""

    def _on_run_change(self, what: str) -> None:
        c = self.controller
        if what == "progress":
            if c.status == "running" and not self._cancel_requested:
                self.progress.show(c.progress, c.step, c.fraction)
        elif what == "status":
            if c.status == "running":
                self._show_running()
                return
            try:  # the outcome is shown first; only then is Run usable again
                if c.status == "done" and c.result is not None:
                    seconds = getattr(c.result, "seconds", None)
                    total = seconds.get("total") if isinstance(seconds, dict) else None
                    self.progress.finish("done", f"done in {total:.1f} s" if total is not None else "done")
                    try:
                        self.show_result(c.result)
                    except Exception as exc:  # rendering errors are shown, not lost in a thread
                        self._show_error(f"could not render the result: {type(exc).__name__}: {exc}")
                else:
                    self.progress.finish(c.status, c.status)
                    self._show_error(c.error or c.status)
            finally:
                self._show_idle()

    def _show_error(self, text: str) -> None:
        label = "Cancelled" if self.controller.status == "cancelled" else "Error"
        self.message.value = wrap(f"<p class='bad'>{label}</p>"
                                  f"<pre style='white-space:pre-wrap'>{render.esc(text)}</pre>")
