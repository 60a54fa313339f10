"""The README's and docs/'s links into the repository lead somewhere: every linked file exists and every
``#anchor`` is a heading of its page, as GitHub names headings (lowercased; punctuation other than
``-`` and ``_`` dropped; spaces to ``-``; a repeated heading gets ``-1``, ``-2``). Sections move
between pages (the measurement history, the known misses); a link left behind fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from flake8_importpolicy import REPOSITORY_URL

REPO = Path(__file__).resolve().parent.parent
PAGES = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md")])
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\]\(([^()\s]+)\)")
_IN_REPOSITORY = f"{REPOSITORY_URL}/blob/main/"


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the headings of ``page``."""
    found: set[str] = set()
    for line in _FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        if not line.startswith("#"):
            continue
        slug = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        candidate, n = slug, 0
        while candidate in found:
            n += 1
            candidate = f"{slug}-{n}"
        found.add(candidate)
    return found


def links(page: Path) -> list[str]:
    """The link targets of ``page`` outside code blocks and code spans."""
    text = _CODE.sub("", _FENCE.sub("", page.read_text(encoding="utf-8")))
    return _LINK.findall(text)


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_relative_links_and_anchors_resolve(page: Path) -> None:
    broken = []
    for target in links(page):
        if target.startswith(_IN_REPOSITORY):  # the README's, absolute for the package index page
            path, _, anchor = target.removeprefix(_IN_REPOSITORY).partition("#")
            linked = REPO / path
        elif re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        else:
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no heading #{anchor} in {linked.name}")
    assert not broken, broken


def test_the_readme_links_work_on_the_package_index_page() -> None:
    """The README is the package index page's text (setup.cfg's long_description), where a relative
    link leads nowhere: each of its links is absolute; those into the repository resolve above."""
    relative = [target for target in links(REPO / "README.md")
                if not re.match(r"[a-z]+:", target) and not target.startswith("#")]
    assert not relative, relative
    assert any(target.startswith(_IN_REPOSITORY) for target in links(REPO / "README.md"))


def test_the_anchor_rule() -> None:
    """The slug rule on headings of these pages (GitHub's, as a link to them shows)."""
    page = REPO / "docs" / "performance.md"
    assert "adopting-vllm-0330" in anchors(page)
    assert "ipl001-light-imports-heavy" in anchors(REPO / "docs" / "codes.md")
