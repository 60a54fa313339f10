"""One test of "is this path under a source root" (answers/roots.py), which both the facts caches
(which cache keeps a file's facts) and the per-file index (which files it answers for) use."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flake8_importpolicy.answers.facts_cache import DiskFactsCache
from flake8_importpolicy.answers.per_file import _Index
from flake8_importpolicy.answers.roots import is_under_roots, root_prefixes


@pytest.mark.parametrize(
    ("path", "roots", "under"),
    [
        ("/a/src/m.py", ("/a/src",), True),
        ("/a/src2/m.py", ("/a/src",), False),
        ("/a/src2", ("/a/src",), False),
        ("/a/src", ("/a/src",), True),
        ("/a/src/", ("/a/src",), True),
        ("/a/src/m.py", ("/a/src/",), True),
        ("/a/src/m.py", ("/a/src//",), True),
        ("/a/sr", ("/a/src",), False),
        ("/a/src/m.py", ("/b", "/a/src"), True),
        ("/a/m.py", (), False),
    ],
)
def test_prefixes(path: str, roots: tuple[str, ...], under: bool) -> None:
    assert is_under_roots(path, root_prefixes(roots)) is under


def test_symlink_is_judged_by_its_real_path(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    outside = tmp_path / "site-packages" / "heavy.py"
    outside.parent.mkdir()
    outside.write_text("")
    link = src / "heavy.py"
    link.symlink_to(outside)
    prefixes = root_prefixes([os.path.realpath(src)])
    assert is_under_roots(os.path.abspath(link), prefixes)
    assert not is_under_roots(os.path.realpath(link), prefixes)


def test_both_callers_agree(tmp_path: Path) -> None:
    roots = (tmp_path / "src",)
    shared = DiskFactsCache(tmp_path / "user")
    project = DiskFactsCache(tmp_path / "project", shared=shared, source_roots=roots)
    index = _Index((str(roots[0]),), frozenset(), {})
    for name in ("src/m.py", "src2/m.py", "src", "sr"):
        path = tmp_path / name
        assert index.covers(str(path)) is (project._store(path) is project), name
