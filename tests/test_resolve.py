"""Tests for flake8_importpolicy.analysis.resolve: which file runs for a dotted name (rules 5-7).

Trees are built in ``tmp_path``; the interpreter facts come from the running interpreter (queried once
per process). A few cases are checked against the interpreter itself with ``helpers.run_import``.
"""

from __future__ import annotations

import dataclasses
import importlib.machinery
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import HANG_CATCHER, run_import

from flake8_importpolicy.analysis import resolve
from flake8_importpolicy.analysis.resolve import (
    ModuleIndex,
    query_interpreter,
    read_source,
)
from flake8_importpolicy.model.errors import InterpreterError
from flake8_importpolicy.model.interpreter import InterpreterInfo, ResolvedModule

EXT = importlib.machinery.EXTENSION_SUFFIXES[0]


def tree(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
    return root


def index(*roots: Path) -> ModuleIndex:
    return ModuleIndex([root.resolve() for root in roots], query_interpreter())


def test_package_beats_module_in_the_same_directory(tmp_path: Path) -> None:
    root = tree(tmp_path, {"thing/__init__.py": "", "thing.py": ""})
    found = index(root).resolve_module("thing")
    assert found.kind == "package"
    assert found.path == root.resolve() / "thing" / "__init__.py"
    assert found.locations == (root.resolve() / "thing",)
    assert found.origin == "first-party" and found.is_package and found.has_source


def test_extension_beats_source_and_is_a_leaf(tmp_path: Path) -> None:
    root = tree(tmp_path, {"fast.py": "import heavy\n", f"fast{EXT}": b"", "pkg/__init__.py": "",
                           f"pkg/__init__{EXT}": b""})
    ix = index(root)
    fast = ix.resolve_module("fast")
    assert fast.kind == "extension" and fast.path is not None and fast.path.name == f"fast{EXT}"
    assert not fast.has_source
    pkg = ix.resolve_module("pkg")
    assert pkg.kind == "extension" and pkg.is_package


def test_source_beats_bytecode_and_bytecode_alone_is_not_analysed(tmp_path: Path) -> None:
    root = tree(tmp_path, {"both.py": "", "both.pyc": b"", "only.pyc": b""})
    ix = index(root)
    assert ix.resolve_module("both").kind == "source"
    only = ix.resolve_module("only")
    assert only.kind == "bytecode" and not only.has_source


def test_stub_never_resolves(tmp_path: Path) -> None:
    root = tree(tmp_path, {"stubbed.pyi": "", "mixed.pyi": "", "mixed.py": ""})
    ix = index(root)
    assert ix.resolve_module("stubbed").kind == "unresolved"
    mixed = ix.resolve_module("mixed")
    assert mixed.path is not None and mixed.path.suffix == ".py"


def test_namespace_package_split_over_two_roots(tmp_path: Path) -> None:
    one = tree(tmp_path / "one", {"ns/a.py": "", "ns/deep/x.py": ""})
    two = tree(tmp_path / "two", {"ns/b.py": "", "ns/deep/y.py": ""})
    ix = index(one, two)
    ns = ix.resolve_module("ns")
    assert ns.kind == "namespace" and ns.path is None and not ns.has_source
    assert ns.locations == (one.resolve() / "ns", two.resolve() / "ns")
    assert ix.resolve_module("ns.b").path == two.resolve() / "ns" / "b.py"
    assert ix.find_children("ns") == ("ns.a", "ns.b", "ns.deep")
    assert list(ix.find_descendants("ns")) == ["ns.a", "ns.b", "ns.deep", "ns.deep.x", "ns.deep.y"]


def test_namespace_portion_loses_to_a_module_on_a_later_root(tmp_path: Path) -> None:
    one = tree(tmp_path / "one", {"mod/data.py": ""})
    two = tree(tmp_path / "two", {"mod.py": ""})
    found = index(one, two).resolve_module("mod")
    assert found.kind == "source" and found.path == two.resolve() / "mod.py"


def test_first_root_wins(tmp_path: Path) -> None:
    one = tree(tmp_path / "one", {"dup.py": ""})
    two = tree(tmp_path / "two", {"dup/__init__.py": ""})
    assert index(one, two).resolve_module("dup").path == one.resolve() / "dup.py"


def test_first_party_json_shadows_stdlib_but_abc_is_frozen(tmp_path: Path) -> None:
    root = tree(tmp_path, {"json.py": "", "abc.py": "", "os.py": ""})
    ix = index(root)
    json = ix.resolve_module("json")
    assert json.origin == "first-party" and json.path == root.resolve() / "json.py"
    abc = ix.resolve_module("abc")
    assert abc.kind == "frozen" and abc.preloaded and abc.path is None
    assert ix.resolve_module("os").kind == "frozen"
    assert ix.resolve_module("sys").kind == "builtin"
    assert "json" in ix.find_first_party_top_levels()
    assert "abc" not in ix.find_first_party_top_levels()


def test_oracle_json_shadows_and_abc_does_not(tmp_path: Path) -> None:
    root = tree(tmp_path, {"json.py": "", "abc.py": "", "lightmod.py": "import abc\nimport json\n"})
    runtime = run_import("lightmod", [root])
    assert str(runtime["json"]).startswith(str(root))
    assert "abc" not in runtime  # already imported at start-up: never runs again


def test_submodule_of_a_plain_module_is_unresolved(tmp_path: Path) -> None:
    root = tree(tmp_path, {"plain.py": "", "plain/sub.py": ""})
    ix = index(root)
    assert ix.resolve_module("plain").kind == "source"
    assert ix.resolve_module("plain.sub").kind == "unresolved"
    assert ix.find_children("plain") == ()


def test_invalid_names_are_unresolved(tmp_path: Path) -> None:
    ix = index(tmp_path)
    for name in ("", "a..b", ".a", "a-b", "1a", "no_such_module_for_tests"):
        assert ix.resolve_module(name).kind == "unresolved", name


def test_directory_named_like_a_module_file_is_not_a_module(tmp_path: Path) -> None:
    root = tree(tmp_path, {"weird.py/inner.txt": ""})
    assert index(root).resolve_module("weird").kind == "unresolved"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_named_like_a_module_is_found_and_never_read(tmp_path: Path) -> None:
    """CPython's FileFinder (``_path_isfile``: stat + S_ISREG) skips a FIFO named ``x.py`` or
    ``__init__.py`` (``import pkg.fifo`` is a ModuleNotFoundError, ``nsish`` a namespace package).
    Path search keeps it, like a dangling symlink, so that the check reports it (IPL005: only regular
    files are sources) instead of dropping it silently; reading it fails at once."""
    root = tree(tmp_path, {"pkg/__init__.py": "", "nsish/x.py": ""})
    os.mkfifo(root / "pkg/fifo.py")
    os.mkfifo(root / "nsish/__init__.py")
    (root / "pkg/dangling.py").symlink_to(tmp_path / "missing.py")
    ix = index(root)
    assert ix.resolve_module("pkg.fifo").path == root / "pkg/fifo.py"
    assert ix.find_children("pkg") == ("pkg.dangling", "pkg.fifo")
    assert ix.resolve_module("nsish").path == root / "nsish/__init__.py"
    with pytest.raises(OSError, match=r"not a regular file \(a FIFO\)"):
        read_source(root / "pkg/fifo.py")
    for name in ("pkg.fifo", "nsish"):
        completed = subprocess.run([sys.executable, "-c", f"import {name}; print({name}.__file__)"],
                                   cwd=root, capture_output=True, text=True, timeout=HANG_CATCHER,
                                   check=False)
        assert ("ModuleNotFoundError" in completed.stderr) == (name == "pkg.fifo"), completed
        assert name == "pkg.fifo" or completed.stdout.strip() == "None"


def test_children_skip_pycache_hidden_and_non_identifiers(tmp_path: Path) -> None:
    root = tree(tmp_path, {
        "pkg/__init__.py": "", "pkg/a.py": "", "pkg/b/__init__.py": "", "pkg/c.pyi": "",
        "pkg/__pycache__/a.cpython-311.pyc": b"", "pkg/.hidden.py": "", "pkg/not-valid.py": "",
        f"pkg/ext{EXT}": b"",
    })
    ix = index(root)
    assert ix.find_children("pkg") == ("pkg.a", "pkg.b", "pkg.ext")


def test_stdlib_and_origin(tmp_path: Path) -> None:
    ix = index(tmp_path)
    email = ix.resolve_module("email.mime")
    assert email.kind == "package" and email.origin == "stdlib"
    assert ix.origin_of_path(tmp_path / "x.py") == "first-party"


def test_a_sys_path_entry_inside_a_source_root_is_installed_code(tmp_path: Path) -> None:
    """A module found through an entry of the interpreter's ``sys.path`` that lies inside a source
    root (``PYTHONPATH=.venv/site`` in the project) is third-party: it is installed code, not
    the project's (issue 25 item 7); the rest of the root stays first-party."""
    root = tree(tmp_path, {"app/__init__.py": "", ".venv/site/tp/__init__.py": ""}).resolve()
    site = root / ".venv" / "site"
    info = dataclasses.replace(query_interpreter(), sys_path=(str(site),))
    ix = ModuleIndex([root], info)
    assert ix.resolve_module("tp").origin == "third-party"
    assert ix.resolve_module("app").origin == "first-party"
    assert ix.origin_of_path(site / "tp" / "__init__.py") == "third-party"


def test_distribution_of_a_top_level_package(tmp_path: Path) -> None:
    """The distribution whose metadata names a top-level package, as
    ``importlib.metadata.packages_distributions`` finds it: ``top_level.txt``, else ``RECORD``;
    the package's own name when no metadata names it."""
    site = tree(tmp_path, {
        "torch/__init__.py": "", "torchgen/__init__.py": "",
        "torch-2.1.0.dist-info/top_level.txt": "functorch\ntorch\ntorchgen\n",
        "torch-2.1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: torch\nVersion: 2.1.0\n",
        "rec_dist-2.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: rec_dist\nVersion: 2.0\n",
        "rec/__init__.py": "", "recx.py": "",
        "rec_dist-2.0.dist-info/RECORD": "rec/__init__.py,sha256=x,1\nrecx.py,,\n"
                                         "rec_dist-2.0.dist-info/RECORD,,\n__pycache__/x.pyc,,\n",
        "loose/__init__.py": "",
    }).resolve()
    info = dataclasses.replace(query_interpreter(), sys_path=(str(site),))
    ix = ModuleIndex([tmp_path / "project"], info)
    assert [ix.distribution_of(name) for name in ("torch", "torchgen", "rec", "recx", "loose")] == [
        "torch", "torch", "rec_dist", "rec_dist", "loose"]
    found = {}
    for name in ("torch", "torchgen", "rec", "recx"):  # the oracle: importlib.metadata
        done = subprocess.run(
            [sys.executable, "-I", "-c", "import importlib.metadata as m, sys; sys.path[:0] = "
             f"[{str(site)!r}]; print(m.packages_distributions()[{name!r}][0])"],
            capture_output=True, text=True, timeout=HANG_CATCHER, check=True)
        found[name] = done.stdout.strip()
    assert found == {"torch": "torch", "torchgen": "torch", "rec": "rec_dist", "recx": "rec_dist"}


def test_interpreter_info_json_round_trip() -> None:
    info = query_interpreter()
    assert InterpreterInfo.from_json(info.to_json()) == info
    assert info.version == sys.version_info[:2]
    assert "abc" in info.preloaded and "sys" in info.builtin
    assert info.extension_suffixes[0] == EXT


def test_query_of_a_missing_interpreter_is_an_interpreter_error(tmp_path: Path) -> None:
    with pytest.raises(InterpreterError, match="cannot run interpreter"):
        query_interpreter(str(tmp_path / "no-python"))


def test_query_of_a_failing_interpreter_is_an_interpreter_error(tmp_path: Path) -> None:
    fake = tmp_path / "fake-python"
    fake.write_text("#!/bin/sh\necho broken >&2\nexit 3\n")
    fake.chmod(0o755)
    with pytest.raises(InterpreterError, match="exit 3"):
        query_interpreter(str(fake))


def test_preloaded_alias_module_is_preloaded(tmp_path: Path) -> None:
    assert "os.path" in query_interpreter().preloaded
    found = index(tmp_path).resolve_module("os.path")
    assert found.preloaded
    assert found.kind != "unresolved"


def test_query_keeps_first_entry_under_safe_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.setattr(resolve, "_QUERY_CACHE", {})
    monkeypatch.setenv("PYTHONSAFEPATH", "1")
    monkeypatch.setenv("PYTHONPATH", str(site))
    real = subprocess.run(
        [sys.executable, "-c", "import sys; print(sys.path)"], capture_output=True, text=True,
        check=True, timeout=HANG_CATCHER,
    ).stdout
    assert str(site) in real
    assert str(site) in query_interpreter().sys_path


def test_a_known_meta_path_finder_redirects_a_top_level_name(tmp_path: Path) -> None:
    """setuptools' ``.pth`` finder answers ``import distutils`` with ``setuptools._distutils``:
    path search of ``distutils`` and its submodules happens there, and ``setuptools`` runs first."""
    site = tree(tmp_path / "site-packages", {
        "setuptools/__init__.py": "",
        "setuptools/_distutils/__init__.py": "",
        "setuptools/_distutils/core.py": "from .dist import Distribution\n",
        "setuptools/_distutils/dist.py": "",
    })
    info = dataclasses.replace(
        query_interpreter(),
        sys_path=(str(site),),
        meta_path=("_distutils_hack.DistutilsMetaFinder", "_frozen_importlib.BuiltinImporter"),
        preloaded=frozenset(),
    )
    found = ModuleIndex([], info)
    core = found.resolve_module("distutils.core")
    assert core.path == site / "setuptools" / "_distutils" / "core.py"
    assert found.resolve_module("distutils").found_as == "setuptools._distutils"
    assert InterpreterInfo.from_json(info.to_json()) == info

    without = ModuleIndex([], dataclasses.replace(info, meta_path=()))
    assert without.resolve_module("distutils").found_as is None


def test_the_finder_hop_runs_the_real_module_s_parents(tmp_path: Path) -> None:
    from flake8_importpolicy.analysis.extract import extract_facts
    from flake8_importpolicy.analysis.graph import ImportGraph
    from flake8_importpolicy.model.facts import ModuleFacts, Target
    from flake8_importpolicy.model.graph import HopKind

    site = tree(tmp_path / "site-packages", {
        "setuptools/__init__.py": "",
        "setuptools/_distutils/__init__.py": "",
    })
    info = dataclasses.replace(
        query_interpreter(), sys_path=(str(site),),
        meta_path=("_distutils_hack.DistutilsMetaFinder",), preloaded=frozenset(),
    )
    found = ModuleIndex([], info)
    target = Target(((3, 11),), "linux")

    def facts(resolved: ResolvedModule) -> ModuleFacts:
        path = resolved.path
        assert path is not None
        return extract_facts(path.read_bytes(), target)

    edges = ImportGraph(found, facts).find_import_time_edges("distutils")
    assert [(h.kind, h.imported, h.line) for h in edges] == [(HopKind.FINDER, "setuptools", 1)]


def test_query_lists_entry_points_and_distributions_are_found_by_normalised_name(
    tmp_path: Path,
) -> None:
    """The interpreter query lists the installed entry points as ``importlib.metadata`` does (this
    package's own flake8 plugin among them), they survive the cache's JSON, and a distribution is
    found by its ``.dist-info`` directory, names compared normalised (``Distribution.from_name``)."""
    from importlib import metadata

    info = query_interpreter()
    expected = {(p.group, p.name, p.value) for p in metadata.entry_points(group="flake8.extension")}
    assert expected and expected <= set(info.entry_points)
    assert InterpreterInfo.from_json(info.to_json()) == info
    assert info.entry_point_values("flake8.extension", "IPL") == (
        "flake8_importpolicy.flake8_checker:ImportPolicyChecker",
    )

    (tmp_path / "Some_Dist.Name-1.0.dist-info").mkdir()
    (tmp_path / "legacy-2.0.egg-info").mkdir()
    found = ModuleIndex([], dataclasses.replace(info, sys_path=(str(tmp_path),)))
    assert found.has_distribution("some-dist-name") and found.has_distribution("SOME.DIST_NAME")
    assert found.has_distribution("legacy")
    assert not found.has_distribution("some-dist") and not found.has_distribution("missing")
