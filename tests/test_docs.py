"""The README and docs/*.md stay true: every relative link resolves, and every `dqkit ...` command the
README shows is a real subcommand with real options. No Spark: only files and the argument parser."""
from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from dqkit.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
#: the maintainers' pages beside the code: the benchmark history and the test suite's guide
NOTES = [ROOT / "benchmarks" / "README.md", ROOT / "benchmarks" / "RESULTS.md", ROOT / "tests" / "README.md"]
PAGES = [README, *DOCS, *NOTES]

_FENCE = re.compile(r"^\s*(```|~~~)")
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_SHELL_OPERATORS = {">", ">>", "<", "|", "||", "&&", ";", "&", "2>", "2>&1"}


def _prose(text: str, inline_code: bool = False) -> str:
    """The text outside fenced code blocks and, unless ``inline_code``, outside inline code (links there
    are examples, not links; a heading's anchor keeps its inline code's text, as on GitHub)."""
    out, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append(line if inline_code else re.sub(r"`[^`]*`", "", line))
    return "\n".join(out)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading anchor of a Markdown page (repeated headings get -1, -2, ... as on GitHub)."""
    seen: dict[str, int] = {}
    out = set()
    for line in _prose(page.read_text(encoding="utf-8"), inline_code=True).splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = _slug(m.group(1))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def relative_links(page: Path) -> list[str]:
    """The link targets of a page that point inside the repository (not URLs, not mail)."""
    targets = _LINK.findall(_prose(page.read_text(encoding="utf-8")))
    return [t for t in targets if not re.match(r"^[a-z][a-z0-9+.-]*:", t, re.I)]


def broken_links(page: Path) -> list[str]:
    """The relative links of ``page`` whose file, or whose heading anchor, does not exist."""
    broken = []
    for target in relative_links(page):
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target} (no heading #{anchor} in {dest.name})")
    return broken


def code_blocks(text: str) -> list[list[str]]:
    """The lines of each fenced code block, in order."""
    blocks, current = [], None
    for line in text.splitlines():
        if _FENCE.match(line):
            if current is None:
                current = []
            else:
                blocks.append(current)
                current = None
        elif current is not None:
            current.append(line)
    return blocks


def dqkit_commands(text: str) -> list[str]:
    """Every command line in the code blocks that runs dqkit (continuations joined, prompts dropped)."""
    commands = []
    for block in code_blocks(text):
        joined, pending = [], ""
        for line in block:
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            joined.append(pending + line)
            pending = ""
        for line in joined:
            line = line.strip().removeprefix("$ ")
            if line.startswith("dqkit ") or line == "dqkit":
                commands.append(line)
    return commands


def parse_error(command: str) -> str | None:
    """None when ``build_parser()`` accepts the command, else what argparse said."""
    words = []
    for word in shlex.split(command, comments=True)[1:]:
        if word in _SHELL_OPERATORS:
            break
        words.append(word)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            build_parser().parse_args(words)
    except SystemExit as exc:
        if exc.code not in (0, None):
            return err.getvalue().strip().splitlines()[-1] if err.getvalue().strip() else f"exit {exc.code}"
    return None


def test_the_docs_pages_exist_and_the_readme_is_a_short_front_page():
    names = {p.name for p in DOCS}
    for name in ("delta.md", "rules.md", "dedup.md", "tcfc.md", "lake.md", "query.md", "performance.md",
                 "design.md"):
        assert name in names, f"docs/{name} is missing"
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250


def test_the_readme_opens_with_exactly_the_two_set_up_commands():
    first = code_blocks(README.read_text(encoding="utf-8"))[0]
    assert [line.split("#")[0].strip() for line in first if line.strip()] == ["make demo", "make test"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page):
    assert broken_links(page) == []


def test_the_link_checker_catches_a_missing_file_and_a_missing_heading(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[ok](#title) [gone](nowhere.md) [bad anchor](#no-such-heading) "
                    "[web](https://example.org) `[code](ignored.md)`\n")
    assert broken_links(page) == ["nowhere.md (no such file)", "#no-such-heading (no heading #no-such-heading in page.md)"]
    page.write_text("## Since (`detect --since`)\n\n[ok](#since-detect---since)\n")  # inline code stays in the anchor
    assert broken_links(page) == []


def test_the_readme_shows_a_command_for_every_subcommand():
    shown = {shlex.split(c)[1] for c in dqkit_commands(README.read_text(encoding="utf-8"))}
    assert {"delta", "detect", "repair", "dedup", "tcfc", "lake", "query", "report"} <= shown


@pytest.mark.parametrize("command", dqkit_commands(README.read_text(encoding="utf-8")))
def test_every_dqkit_command_in_the_readme_parses(command):
    assert parse_error(command) is None


def test_the_command_checker_refuses_an_unknown_option_and_subcommand():
    assert parse_error("dqkit delta old new --no-such-option") is not None
    assert parse_error("dqkit frobnicate x") is not None
    assert parse_error("dqkit dedup --example-config > dedup.yaml") is None
    assert dqkit_commands("```\ndqkit lake L \\\n  --verify\n.venv/bin/python x.py\n```\nimport dqkit\n") == [
        "dqkit lake L    --verify"]


def _sections(page: Path) -> dict[str, str]:
    """The text under each level-2 heading of a page (fenced code included)."""
    out, current = {}, None
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
            out[current] = ""
        elif current is not None:
            out[current] += line + "\n"
    return out


def test_the_performance_page_is_a_short_current_standing_with_a_command_per_system():
    page = ROOT / "docs" / "performance.md"
    assert len(page.read_text(encoding="utf-8").splitlines()) <= 320  # the history is benchmarks/RESULTS.md
    sections = _sections(page)
    for system in ("Diftong delta", "BigDansing detection", "detect --since", "Repair and connected components",
                   "Entity deduplication", "Incremental dedup (dedup --since)", "TCFC", "R2D2 on a lake", "Daisy"):
        body = sections.get(system, "")
        assert "|---|" in body, f"{system}: no table"
        assert any("benchmarks/" in line for block in code_blocks(body) for line in block), f"{system}: no command"
    assert "Tuning knobs" in sections


def test_the_reliability_page_opens_with_one_line_guarantees_and_keeps_the_test_map_below():
    sections = list(_sections(ROOT / "docs" / "reliability.md").items())
    (first, guarantees), (second, _) = sections[0], sections[1]
    assert first == "The guarantees" and second.startswith("For maintainers")
    promises = [line for line in guarantees.splitlines() if line.startswith("- **")]
    assert len(promises) >= 10 and len(guarantees.splitlines()) <= 60  # one page
    for promise in ("refused before Spark", "never modified", "atomic", "deterministic", "Cancel"):
        assert any(promise in line for line in promises), promise
