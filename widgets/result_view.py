"""ResultView: any dqkit result's ``sections()`` in tabs; ExplorerBase: the run/cancel/progress plumbing.

Every explorer shows its result through ``ResultView``, so a widget says what ``to_html()`` and the
report say. ``ExplorerBase`` binds a ``RunController`` to a Run button, a ``SparkProgress`` bar with
Cancel, an error line and a ``ResultView``.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import ipywidgets as W

from dqkit.contract import render
from dqkit.contract.result import Chart, Table, _titled
from dqkit.widgets.controllers import RunController
from dqkit.widgets.progress import SparkProgress

#: (tab title, does this block belong to the tab?). A block goes to the first tab whose test takes it;
#: a tab with test ``None`` takes every block no other tab takes.
TabRule = tuple[str, "Callable[[Any], bool] | None"]


#: what a tab shows before a run, while one runs and after a cancel
NO_RESULT = render.wrap("<p class='muted'>No result yet: press Run.</p>")


def wrap(body: str) -> str:
    return render.wrap(body)


def _list_tab(which: str) -> Callable[[Any], bool]:
    title = f"{which} violations"
    return lambda b: isinstance(b, Table) and b.title == title


#: the tabs of a ``detect --since`` result (``mode == "since"``) in every view, whatever it was built with:
#: the verdict, what changed and the per-rule counts; then one tab per list, each the result's own section.
SINCE_TABS: tuple[TabRule, ...] = (("Summary", None), ("New", _list_tab("New")), ("Resolved", _list_tab("Resolved")),
                                   ("Persisting", _list_tab("Persisting")))


def tabs_for(result: Any, default: Sequence[TabRule]) -> list[TabRule]:
    """The tabs ``result`` is shown in: a since result's New / Resolved / Persisting, else ``default``."""
    return list(SINCE_TABS) if getattr(result, "mode", None) == "since" else list(default)


class ResultView(W.Tab):
    """A result's sections, grouped into tabs by ``tabs`` rules (one tab with everything by default).

    A ``detect --since`` result is shown in ``SINCE_TABS`` instead (Summary, New, Resolved, Persisting);
    the next other result gets the view's own tabs back.
    """

    def __init__(self, tabs: Sequence[TabRule] = (("Result", None),), sample_rows: int = 10) -> None:
        self.base_rules = list(tabs)
        self.rules = list(tabs)
        self.sample_rows = sample_rows
        self.result: Any = None
        self._charts: dict[tuple[str, str], str] = {}  # the shown result's drawn charts, by (name, title)
        super().__init__(children=[W.HTML(NO_RESULT) for _ in self.rules])
        self._set_titles()

    def _set_titles(self) -> None:
        for i, (title, _) in enumerate(self.rules):
            self.set_title(i, title)

    def _retab(self, rules: list[TabRule]) -> None:
        """Rebuild the tabs when a result needs other ones (same titles: nothing to do)."""
        if [t for t, _ in rules] == [t for t, _ in self.rules]:
            self.rules = rules
            return
        self.rules = rules
        self.children = [W.HTML(NO_RESULT) for _ in rules]
        self._set_titles()

    def show(self, result: Any) -> None:
        """Render ``result.sections()`` into the tabs. Showing the same result again (another page of
        rows, ``set_sample_rows``) redraws no chart: each is drawn once per result."""
        if result is not self.result:
            self.result, self._charts = result, {}
        self._retab(tabs_for(result, self.base_rules))
        groups: list[list[Any]] = [[] for _ in self.rules]
        for block in result.sections(sample_rows=self.sample_rows):
            taken = [i for i, (_, takes) in enumerate(self.rules) if takes is not None and takes(block)]
            rest = [i for i, (_, takes) in enumerate(self.rules) if takes is None]
            target = (taken or rest or [None])[0]
            if target is not None:
                groups[target].append(block)
        for child, blocks in zip(self.children, groups):
            child.value = render.HTML_STYLE + (self._html(blocks) if blocks else
                                               "<div class='dqkit'><p class='muted'>Nothing to show.</p></div>")
        if self.rules and self.rules[0] == SINCE_TABS[0] and getattr(result, "mode", None) == "since":
            for (title, _), child, blocks in zip(self.rules[1:], self.children[1:], groups[1:]):
                if not blocks:  # an empty list has no section: say which list is empty
                    child.value = wrap(f"<p class='muted'>No {title.lower()} violation.</p>")
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
        """No result: every tab says so (a blank tab reads as broken)."""
        self.result, self._charts = None, {}
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
