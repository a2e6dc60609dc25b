"""What a new user sees, checked in a real browser: ``make ui-check`` and ``make screenshots``.

``render_notebook`` executes a tutorial (nbclient, widget state saved) and exports it to HTML with that
state embedded (nbconvert). ``inspect_notebook_html`` opens the page in headless Chromium (Playwright,
the system's ``/usr/bin/chromium``: browsers cannot be downloaded here) and reports every problem:
an error output, a tab without a title, a tab with nothing in it. The widget JavaScript is fetched
from a CDN by the exported page, which these machines cannot reach, so the check reads the embedded
widget state in the page and draws each tab's HTML into the page itself: what the front end would
show in that tab, measured as rendered text.

``screenshot(html, png)`` writes one PNG of a report page; ``python tests/support/ui_browser.py screenshots``
runs every system's report on its bundled example and writes docs/img/<system>_report.png.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")

#: the check run in the page: error outputs, and every Tab model of the embedded widget state with
#: its titles and what each child tab would draw (its HTML models' values, rendered as text)
_INSPECT_JS = r"""
() => {
  const problems = [];
  const errors = document.querySelectorAll(
    '[data-mime-type="application/vnd.jupyter.stderr"], .output_error, .jp-OutputArea-output.output_error');
  for (const e of errors) {
    const text = (e.innerText || '').trim();
    if (/Traceback|Error/.test(text)) problems.push('error output: ' + text.slice(0, 200));
  }
  const script = document.querySelector('script[type="application/vnd.jupyter.widget-state+json"]');
  if (!script) return {problems: problems.concat(['no widget state in the page']), tabs: []};
  const models = JSON.parse(script.textContent).state || {};
  const ref = (x) => models[String(x).replace('IPY_MODEL_', '')];
  const html = (m, depth) => {
    if (!m || depth > 8) return '';
    const s = m.state || {};
    let out = typeof s.value === 'string' && /HTML/.test(m.model_name) ? s.value : '';
    for (const c of (s.children || [])) out += html(ref(c), depth + 1);
    return out;
  };
  const tabs = [];
  for (const [id, m] of Object.entries(models)) {
    if (m.model_name !== 'TabModel') continue;
    const s = m.state || {};
    const children = s.children || [];
    const titles = s.titles || [];
    const shown = [];
    children.forEach((c, i) => {
      const title = (titles[i] || '').trim();
      if (!title) problems.push(`tab ${i} of widget ${id.slice(0, 8)} has no title`);
      const box = document.createElement('div');
      box.innerHTML = html(ref(c), 0);
      document.body.appendChild(box);
      const text = (box.innerText || '').trim();
      const images = box.querySelectorAll('img').length;
      if ((!text || /^Nothing to show\.?$/.test(text)) && !images)
        problems.push(`tab "${title}" of widget ${id.slice(0, 8)} is empty`);
      if (/No result yet/.test(text)) problems.push(`tab "${title}" of widget ${id.slice(0, 8)} shows no result`);
      if (/Traceback \(most recent call last\)/.test(text)) problems.push(`tab "${title}" shows a traceback`);
      shown.push({title: title, chars: text.length, images: images});
      box.remove();
    });
    tabs.push({id: id, tabs: shown});
  }
  return {problems: problems, tabs: tabs};
}
"""


def chromium() -> str | None:
    """The system's Chromium, or None."""
    found = os.environ.get("DQKIT_CHROMIUM") or next((p for p in CHROMIUM_CANDIDATES if Path(p).exists()), None)
    return found or shutil.which("chromium")


def browser_missing() -> str | None:
    """Why the browser checks cannot run here (what to install), or None when they can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright is not installed: pip install -e '.[ui]' (or pip install playwright)"
    if chromium() is None:
        return "no Chromium found: apt-get install -y chromium (or set DQKIT_CHROMIUM to a Chromium binary)"
    return None


def render_notebook(notebook: Path, out_html: Path, timeout: int = 1800) -> Path:
    """Execute ``notebook`` in its folder with its widget state saved and write it as HTML."""
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    nb = nbformat.read(notebook, as_version=4)
    NotebookClient(nb, timeout=timeout, kernel_name="python3", store_widget_state=True,
                   resources={"metadata": {"path": str(notebook.parent)}}).execute()
    body, _ = HTMLExporter().from_notebook_node(nb)
    out_html.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_html.with_suffix(".tmp")
    tmp.write_text(body, encoding="utf-8")
    tmp.replace(out_html)
    return out_html


def _page(playwright: Any, width: int = 1280, height: int = 900) -> tuple[Any, Any]:
    browser = playwright.chromium.launch(executable_path=chromium(), headless=True,
                                         args=["--no-sandbox", "--disable-gpu"])
    page = browser.new_page(viewport={"width": width, "height": height})
    page.route("http*://**", lambda route: route.abort())  # offline: no CDN, no surprise downloads
    return browser, page


def inspect_notebook_html(html: Path) -> dict[str, Any]:
    """Open an exported notebook in headless Chromium; ``problems`` lists what a user would see wrong."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser, page = _page(p)
        try:
            page.goto(html.resolve().as_uri(), wait_until="load")
            return page.evaluate(_INSPECT_JS)
        finally:
            browser.close()


def screenshot(html: Path, png: Path, width: int = 1200, height: int = 1400) -> Path:
    """One PNG of the top of a report page (what a reader sees first)."""
    from playwright.sync_api import sync_playwright

    png.parent.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser, page = _page(p, width, height)
        try:
            page.goto(html.resolve().as_uri(), wait_until="load")
            page.screenshot(path=str(png), full_page=False)
        finally:
            browser.close()
    return png


def report_screenshots(out: Path = ROOT / "docs" / "img", work: Path = ROOT / "reports" / "screenshots",
                       only: list[str] | None = None) -> list[Path]:
    """Run every system's report on its bundled example and write one PNG per report."""
    from dqkit.report import run_report
    from dqkit.systems import all_systems

    os.chdir(ROOT)  # the examples name bundled data relative to the repository root
    written = []
    for system in all_systems():
        if only and system.name not in only:
            continue
        if not system.example:
            print(f"{system.name}: no bundled example, no screenshot")
            continue
        outcome = run_report(system.name, dict(system.example), work / system.name)
        if not outcome.ok:
            print(f"{system.name}: the report failed: {outcome.error}")
            continue
        png = screenshot(outcome.html, out / f"{system.name}_report.png")
        print(f"{system.name}: {png.relative_to(ROOT)}")
        written.append(png)
    return written


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] != "screenshots":
        sys.exit("usage: python tests/support/ui_browser.py screenshots [SYSTEM ...]")
    missing = browser_missing()
    if missing:
        sys.exit(f"make screenshots needs a browser: {missing}")
    report_screenshots(only=sys.argv[2:] or None)
