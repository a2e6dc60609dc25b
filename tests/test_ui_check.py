"""The tutorials as a new user sees them, in headless Chromium (``make ui-check``; see tests/support/ui_browser.py).

The checker is proved on a page built here (cheap: no Spark, no kernel); executing and inspecting each
tutorial runs only under ``make ui-check`` (DQKIT_UI_CHECK=1), since ``make test`` already runs them
under nbval. Without a browser the tests are skipped and the reason says what to install.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import ipywidgets as W
import pytest
from ipywidgets.embed import dependency_state, embed_data

from support.ui_browser import ROOT, browser_missing, inspect_notebook_html, render_notebook

MISSING = browser_missing()
needs_browser = pytest.mark.skipif(MISSING is not None, reason=f"no browser for the UI check: {MISSING}")
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _page(tmp_path: Path, widget: W.Widget, outputs: str = "") -> Path:
    state = embed_data(views=[widget], state=dependency_state([widget]))["manager_state"]
    page = tmp_path / "page.html"
    page.write_text("<html><body>" + outputs + "<script type='application/vnd.jupyter.widget-state+json'>"
                    + json.dumps(state).replace("</", "<\\/") + "</script></body></html>")  # as nbconvert embeds it
    return page


@needs_browser
def test_the_check_passes_a_titled_tab_with_content_and_catches_an_empty_untitled_tab(tmp_path):
    good = W.Tab(children=[W.HTML("<p>3 violations</p>"), W.VBox([W.HTML("<img src='data:,'/>")])])
    good.titles = ("Violations", "Graph")
    report = inspect_notebook_html(_page(tmp_path, good))
    assert report["problems"] == [] and [t["title"] for t in report["tabs"][0]["tabs"]] == ["Violations", "Graph"]

    bad = W.Tab(children=[W.HTML("<p>ok</p>"), W.HTML(""), W.HTML("<p class='muted'>Nothing to show.</p>")])
    bad.titles = ("Result", "", "Answers")
    problems = inspect_notebook_html(_page(tmp_path, bad))["problems"]
    assert any("has no title" in p for p in problems) and any('tab "Answers"' in p and "is empty" in p for p in problems)


@needs_browser
def test_the_check_catches_an_error_output(tmp_path):
    tab = W.Tab(children=[W.HTML("<p>ok</p>")])
    tab.titles = ("Result",)
    err = ("<div class='jp-OutputArea-output' data-mime-type='application/vnd.jupyter.stderr'>"
           "<pre>Traceback (most recent call last):\nValueError: boom</pre></div>")
    problems = inspect_notebook_html(_page(tmp_path, tab, err))["problems"]
    assert len(problems) == 1 and "ValueError: boom" in problems[0]


@needs_browser
@pytest.mark.skipif(os.environ.get("DQKIT_UI_CHECK") != "1",
                    reason="executes every tutorial again: run it with make ui-check (DQKIT_UI_CHECK=1)")
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[n.stem for n in NOTEBOOKS])
def test_each_tutorial_renders_its_widgets_with_titled_non_empty_tabs_and_no_error(notebook):
    out = ROOT / "reports" / "ui-check" / f"{notebook.stem}.html"
    report = inspect_notebook_html(render_notebook(notebook, out))
    print(f"{notebook.name}: {json.dumps(report['tabs'])}")
    assert report["tabs"], f"{notebook.name} shows no widget with tabs"
    assert report["problems"] == [], report["problems"]
