"""The on-disk facts cache (flake8_importpolicy.answers.facts_cache) and its use by the engine and the CLI.

What the cache promises: keyed by content hash + engine fingerprint + target, not by mtime;
JSON only; safe with concurrent writers (write to a temporary file, then rename); partial, corrupt or
old-format entries are recomputed; a missing, read-only or unusable directory silently means no
cache; ``CACHEDIR.TAG`` and ``.gitignore``; bounded by pruning; ``importpolicy cache clear``.
"""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from flake8_importpolicy import cli
from flake8_importpolicy.analysis.engine import PolicyEngine
from flake8_importpolicy.analysis.extract import extract_facts
from flake8_importpolicy.answers.cache_clear import Cleared, clear_cache
from flake8_importpolicy.answers.facts_cache import DiskFactsCache, prune_cache
from flake8_importpolicy.answers.jsonfile import read_json_sealed
from flake8_importpolicy.config.load import load_policy
from flake8_importpolicy.model.facts import (
    CallKind,
    CallSite,
    FunctionFacts,
    ImportSite,
    ModuleAll,
    ModuleClasses,
    ModuleFacts,
    SourceProblem,
    Target,
)
from flake8_importpolicy.model.findings import Report

FIXTURES = Path(__file__).parent / "fixtures"
TARGET = Target(versions=((3, 11),), platform="linux")
DIGEST = "ab" * 32


def make_facts(n: int) -> ModuleFacts:
    """Facts using only the fields every cache format version stores."""
    return ModuleFacts(
        sites=tuple(
            ImportSite(line=i + 1, col=0, kind="from-import", target=f"pkg.mod{n}_{i}", level=0,
                       names=("a", "b"), flags=("guarded",) if i % 2 else ())
            for i in range(5)
        ),
        bindings=frozenset({f"name{n}", "a", "b"}),
        exports=ModuleAll(("a",) if n % 2 else None),
        problem=None,
    )


def entry_files(directory: Path) -> list[Path]:
    return sorted(p for p in (directory / "facts").glob("*/*") if p.is_file())


# -- a small project ---------------------------------------------------------------------------------

PROJECT = {
    "app/__init__.py": "",
    "app/light.py": "import os\nfrom app import mid\n\n\ndef later():\n    import app.heavy\n",
    "app/mid.py": "try:\n    import app.heavy\nexcept ImportError:\n    pass\n",
    "app/heavy.py": "import json\n",
    "app/other.py": "import app.heavy\n",
}
POLICY = """\
[settings]
source-roots = ["."]
external = "stop"

[heavy]
"app.heavy" = "slow"

[light."app.light"]
reason = "imported before fork"

[light."app.other"]
reason = "also light"
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name, text in PROJECT.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / "policy.toml").write_text(POLICY)
    return tmp_path


def run_engine(root: Path, cache: DiskFactsCache | None) -> Report:
    return PolicyEngine(load_policy(root / "policy.toml"), facts_cache=cache).check()


# -- get / put -----------------------------------------------------------------------------------------


def test_round_trip_and_layout(tmp_path: Path) -> None:
    cache = DiskFactsCache(tmp_path / "c")
    assert cache.get(DIGEST, TARGET) is None
    assert not (tmp_path / "c").exists(), "a read must not create the directory"
    cache.put(DIGEST, TARGET, make_facts(1))
    assert cache.get(DIGEST, TARGET) == make_facts(1)
    assert (cache.hits, cache.misses) == (1, 1)
    # CACHEDIR.TAG (https://bford.info/cachedir/) and a .gitignore that ignores everything.
    tag = (tmp_path / "c" / "CACHEDIR.TAG").read_text()
    assert tag.startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert "*" in (tmp_path / "c" / ".gitignore").read_text().split()
    # Data only: every entry is JSON, no temporary file is left behind.
    files = entry_files(tmp_path / "c")
    assert len(files) == 1 and files[0].suffix == ".json"
    read_json_sealed(files[0])


def test_every_call_kind_and_class_bases_survive_the_cache(tmp_path: Path) -> None:
    """A call of each kind the extractor records (``super``, ``with``, ...) and the classes' bases
    come back from the cache as they went in, for a module and for a function body (a kind the
    decoder did not know made every entry holding it a miss, analysed again on every run)."""
    from typing import get_args

    calls = tuple(CallSite(i + 1, 0, f"C.m{i}", True, kind) for i, kind in enumerate(get_args(CallKind)))
    facts = dataclasses.replace(make_facts(1), calls=calls, class_tree=ModuleClasses(
        frozenset({"C", "D"}), {"C": ("D", "pkg.Base"), "D": ()}))
    cache = DiskFactsCache(tmp_path)
    cache.put(DIGEST, TARGET, facts)
    assert DiskFactsCache(tmp_path).get(DIGEST, TARGET) == facts
    body = FunctionFacts(line=3, sites=(), calls=calls)
    cache.put_function(DIGEST, TARGET, "C.__init__", body)
    assert DiskFactsCache(tmp_path).get_function(DIGEST, TARGET, "C.__init__") == (body,)


def test_key_is_content_and_target_not_path_or_mtime(tmp_path: Path) -> None:
    cache = DiskFactsCache(tmp_path)
    cache.put(DIGEST, TARGET, make_facts(1))
    assert DiskFactsCache(tmp_path).get(DIGEST, TARGET) == make_facts(1)
    assert cache.get("cd" * 32, TARGET) is None
    assert cache.get(DIGEST, Target(versions=((3, 12),), platform="linux")) is None
    assert cache.get(DIGEST, Target(versions=((3, 11),), platform="win32")) is None


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b'{"sites": [[1, 0, "import", "os", 0, "__package__", [], [], ""]], "bind',  # truncated
        b"\x00\x01\x02 not json \xff",
        b"[]",
        b'{"format": 0, "imports": ["os"]}',  # an older layout
        b'{"sites": [[1, 0]], "bindings": [], "all": null, "getattr": false, "problem": null}',
        b'{"sites": [[1, 0, "teleport", "os", 0, "__package__", [], [], ""]], "bindings": [],'
        b' "all": null, "getattr": false, "problem": null}',
        b'{"sites": 7, "bindings": [], "all": null, "getattr": false, "problem": null}',
    ],
    ids=["empty", "truncated", "binary", "wrong-type", "old-format", "short-row", "bad-kind",
         "not-a-list"],
)
def test_bad_entries_are_misses_and_get_rewritten(tmp_path: Path, content: bytes) -> None:
    cache = DiskFactsCache(tmp_path)
    cache.put(DIGEST, TARGET, make_facts(1))
    [entry] = entry_files(tmp_path)
    entry.write_bytes(content)
    reader = DiskFactsCache(tmp_path)
    assert reader.get(DIGEST, TARGET) is None
    assert reader.misses == 1
    reader.put(DIGEST, TARGET, make_facts(2))
    assert DiskFactsCache(tmp_path).get(DIGEST, TARGET) == make_facts(2)


def test_engine_recomputes_corrupt_entries(project: Path) -> None:
    cold = run_engine(project, None)
    assert [v.light for v in cold.violations] == ["app.light", "app.other"]
    cache_dir = project / "cachedir"
    run_engine(project, DiskFactsCache(cache_dir))
    entries = entry_files(cache_dir)
    assert len(entries) >= 4
    for number, entry in enumerate(entries):  # every kind of damage at once
        entry.write_bytes([b"", b"{", b"\xff\xfe", b"null"][number % 4])
    cache = DiskFactsCache(cache_dir)
    assert run_engine(project, cache) == cold
    assert cache.hits == 0
    again = DiskFactsCache(cache_dir)
    assert run_engine(project, again) == cold
    assert again.misses == 0 and again.hits >= 4, "recomputed entries were written back"


def test_engine_hits_survive_mtime_changes_but_not_content_changes(project: Path) -> None:
    cache_dir = project / "cachedir"
    run_engine(project, DiskFactsCache(cache_dir))
    for path in project.glob("app/*.py"):  # what a CI checkout does
        os.utime(path, (1_000_000, 1_000_000))
    warm = DiskFactsCache(cache_dir)
    run_engine(project, warm)
    assert warm.misses == 0 and warm.hits > 0
    (project / "app" / "mid.py").write_text("import json\n")
    changed = DiskFactsCache(cache_dir)
    report = run_engine(project, changed)
    assert changed.misses == 1
    assert [v.light for v in report.violations] == ["app.other"]


# -- unusable directories ------------------------------------------------------------------------------


def test_directory_under_a_file_means_no_cache(project: Path) -> None:
    blocker = project / "not-a-dir"
    blocker.write_text("x")
    cache = DiskFactsCache(blocker / "cache")
    cache.put(DIGEST, TARGET, make_facts(1))  # silently nothing
    assert cache.get(DIGEST, TARGET) is None
    assert run_engine(project, DiskFactsCache(blocker / "cache")) == run_engine(project, None)


@pytest.mark.skipif(
    sys.platform == "win32" or os.geteuid() == 0, reason="needs POSIX permissions (root ignores them)"
)
def test_read_only_directory_means_no_cache(project: Path) -> None:
    cache_dir = project / "ro"
    cache_dir.mkdir()
    cache_dir.chmod(0o555)
    try:
        cache = DiskFactsCache(cache_dir)
        assert run_engine(project, cache) == run_engine(project, None)
        assert cache.hits == 0
        assert not (cache_dir / "facts").exists()
    finally:
        cache_dir.chmod(0o755)


def test_populated_cache_on_a_read_only_filesystem(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache_dir = project / "cachedir"
    run_engine(project, DiskFactsCache(cache_dir))
    (project / "app" / "mid.py").write_text("import app.heavy  # edited\n")  # must be recomputed

    def read_only(*args: object, **kwargs: object) -> object:
        raise PermissionError(30, "Read-only file system")

    monkeypatch.setattr(tempfile, "mkstemp", read_only)  # as jsonfile.write_json_atomic uses it
    cache = DiskFactsCache(cache_dir)
    assert run_engine(project, cache) == run_engine(project, None)
    assert cache.hits > 0 and cache.misses == 1
    assert not list(cache_dir.rglob(".tmp-*"))


def test_cli_check_with_unusable_cache_dir(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "blocker").write_text("x")
    policy = project / "policy.toml"
    policy.write_text(POLICY.replace('external = "stop"', 'external = "stop"\ncache-dir = "blocker/c"'))
    assert cli.main(["check", "--policy", str(policy), "--format", "json"]) == 1
    out = capsys.readouterr()
    assert len(json.loads(out.out)["violations"]) == 2
    assert out.err == ""


# -- concurrency -----------------------------------------------------------------------------------------


def _hammer(args: tuple[str, int, int]) -> int:
    directory, seed, rounds = args
    cache = DiskFactsCache(Path(directory))
    bad = 0
    for i in range(rounds):
        key = (seed + i) % 8
        digest = f"{key:02x}" * 32
        cache.put(digest, TARGET, make_facts(key))
        for other in range(8):
            got = cache.get(f"{other:02x}" * 32, TARGET)
            if got is not None and got != make_facts(other):
                bad += 1
    return bad


def test_concurrent_writers_never_expose_partial_entries(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork" if sys.platform != "win32" else "spawn")
    with context.Pool(4) as pool:
        bad = pool.map(_hammer, [(str(tmp_path), seed, 100) for seed in range(4)])
    assert bad == [0, 0, 0, 0]
    assert not list(tmp_path.rglob(".tmp-*")), "temporary files left behind"
    files = entry_files(tmp_path)
    assert len(files) == 8
    for number in range(8):
        assert DiskFactsCache(tmp_path).get(f"{number:02x}" * 32, TARGET) == make_facts(number)


# -- bounded size and clearing -----------------------------------------------------------------------------


def test_prune_removes_the_oldest_beyond_the_limit(tmp_path: Path) -> None:
    cache = DiskFactsCache(tmp_path)
    for number in range(30):
        cache.put(f"{number:064x}", TARGET, make_facts(number))
    files = entry_files(tmp_path)
    assert len(files) == 30
    by_age = {}
    for age, path in enumerate(files):
        os.utime(path, (1_000_000 + age, 1_000_000 + age))
        by_age[age] = path
    assert prune_cache(tmp_path, 100) == 0
    assert prune_cache(tmp_path, 10) == 20
    assert sorted(entry_files(tmp_path)) == sorted(by_age[age] for age in range(20, 30))
    assert prune_cache(tmp_path / "missing", 0) == 0


def test_clear_refuses_directories_it_did_not_create(tmp_path: Path) -> None:
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "data.txt").write_text("keep me")
    assert clear_cache(precious) == Cleared(found=False)
    assert (precious / "data.txt").exists()


def test_cli_cache_clear(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = str(project / "policy.toml")
    assert cli.main(["check", "--policy", policy]) == 1
    cache_dir = project / ".importpolicy_cache"
    assert (cache_dir / "CACHEDIR.TAG").is_file() and entry_files(cache_dir)
    capsys.readouterr()
    assert cli.main(["cache", "clear", "--policy", policy]) == 0
    assert "removed" in capsys.readouterr().out
    assert not cache_dir.exists()
    assert cli.main(["cache", "clear", "--policy", policy]) == 0
    assert "no cache" in capsys.readouterr().out


# -- fidelity: a cache hit must give the same answer as parsing ------------------------------------------
# (Cache format 1 dropped ModuleFacts.calls/functions/classes/aliases and ImportSite.lazy_use_line, so a
# hit lost every violation found through calls at import time, rules 15-17.)

RICH_SOURCE = """\
import os
import json as j
from . import sibling
from pkg.helpers import setup, register

try:
    import yaml
    HAS_YAML = True
except ImportError:
    yaml = None
    HAS_YAML = False
    import simplejson  # a fallback: runs only if yaml is missing (an import guard)

if HAS_YAML:
    setup()  # a call under the guard too

__all__ = ["Model"]


def __getattr__(name):
    import importlib
    return importlib.import_module("." + name, __name__)


@register
class Model(j.JSONEncoder):
    def __init__(self):
        import torch


setup()

lazy import shutil
WHERE = shutil.which("python")
"""


def test_every_field_survives_the_cache(tmp_path: Path) -> None:
    target = dataclasses.replace(TARGET, versions=((3, 15),))  # ``lazy import`` is 3.15 syntax
    facts = extract_facts(RICH_SOURCE, target)
    assert facts.sites and facts.problem is None
    assert facts.calls and facts.functions and facts.classes and facts.aliases  # rules 15-17
    assert any(site.lazy_use_line for site in facts.sites)
    assert any(site.guard for site in facts.sites) and any(call.guard for call in facts.calls)
    cache = DiskFactsCache(tmp_path)
    cache.put(DIGEST, target, facts)
    assert DiskFactsCache(tmp_path).get(DIGEST, target) == facts


def test_problem_survives_the_cache(tmp_path: Path) -> None:
    facts = extract_facts("def broken(:\n", TARGET)
    assert isinstance(facts.problem, SourceProblem)
    cache = DiskFactsCache(tmp_path)
    cache.put(DIGEST, TARGET, facts)
    assert DiskFactsCache(tmp_path).get(DIGEST, TARGET) == facts


def test_cached_and_uncached_reports_agree_on_every_fixture(tmp_path: Path) -> None:
    differing = []
    for fixture in sorted(p.parent for p in FIXTURES.glob("*/policy.toml")):
        copy = tmp_path / fixture.name
        shutil.copytree(fixture, copy, ignore=shutil.ignore_patterns(".importpolicy_cache"))
        cold = run_engine(copy, None)
        run_engine(copy, DiskFactsCache(copy / "c"))  # populate
        warm = run_engine(copy, DiskFactsCache(copy / "c"))
        if warm != cold:
            differing.append(fixture.name)
    assert differing == []


def test_answer_report_round_trip_builds_each_path_once() -> None:
    """An answer-cache hit rebuilds every hop of the stored report; a closure through torch repeats a
    few thousand paths in tens of thousands of hops, and building a Path per hop was most of a warm
    check's time (benchmarks/real_env.py). The decoded report is the same, its equal paths one
    object."""
    from flake8_importpolicy.answers.whole import report_from_json, report_to_json
    from flake8_importpolicy.model.findings import Unresolved
    from flake8_importpolicy.model.graph import Construct, Hop, HopKind, UnresolvedCode

    where = Path("/site/torch/__init__.py")
    chain = (Hop("app", Path("/src/app.py"), 1, 0, HopKind.IMPORT, "torch"),
             Hop("torch", where, 3, 0, HopKind.IMPORT, "torch._C"))
    unresolved = tuple(
        Unresolved("app", UnresolvedCode("torch", where, line, 0, Construct.DYNAMIC_IMPORT, "x", ()),
                   chain, Path("/src/app.py"), installed="torch")
        for line in (5, 9)
    )
    report = Report(violations=(), problems=(), light_modules=("app",), unresolved=unresolved)
    decoded = report_from_json(json.loads(json.dumps(report_to_json(report))))
    assert decoded == report
    paths = [decoded.unresolved[0].chain[1].path, decoded.unresolved[1].chain[1].path,
             decoded.unresolved[0].site.path, decoded.unresolved[1].site.path]
    assert all(path is paths[0] for path in paths)


def test_answer_report_holds_each_hop_and_site_once() -> None:
    """The unresolved sites of a closure through torch share their chains' hops (10,920 hops, 854
    distinct, in benchmarks/real_env.py), and two light modules meet the same sites: the stored
    report holds each distinct hop and site once and the entries name them by position, so an
    answer-cache hit decodes 854 hops, not 10,920. The decoded report is the same; a position
    outside a table, or not an integer (also in a chain seen before), is a malformed entry (a miss),
    never a crash or another hop."""
    from flake8_importpolicy.answers.jsonfile import MALFORMED
    from flake8_importpolicy.answers.whole import report_from_json, report_to_json
    from flake8_importpolicy.model.findings import Unresolved
    from flake8_importpolicy.model.graph import Construct, Hop, HopKind, UnresolvedCode

    where = Path("/site/torch/__init__.py")
    chain = (Hop("app", Path("/src/app.py"), 1, 0, HopKind.IMPORT, "torch"),
             Hop("torch", where, 3, 0, HopKind.IMPORT, "torch._C"))
    unresolved = tuple(
        Unresolved(light, UnresolvedCode("torch", where, line, 0, Construct.DYNAMIC_IMPORT, "x", ()),
                   chain[:length], Path(f"/src/{light}.py"), installed="torch")
        for light, line, length in (("app", 5, 2), ("app", 9, 2), ("app", 11, 1), ("cli", 5, 2))
    )
    report = Report(violations=(), problems=(), light_modules=("app", "cli"), unresolved=unresolved)
    stored = json.loads(json.dumps(report_to_json(report)))
    assert len(stored["hops"]) == 2
    assert len(stored["sites"]) == 3
    assert [row[1:3] for row in stored["unresolved"]] == [[0, [0, 1]], [1, [0, 1]], [2, [0]],
                                                          [0, [0, 1]]]
    decoded = report_from_json(stored)
    assert decoded == report
    assert decoded.unresolved[0].chain[1] is decoded.unresolved[1].chain[1]
    assert decoded.unresolved[0].site is decoded.unresolved[3].site
    for at, bad in ((2, [2]), (2, [-1]), (2, ["0"]), (1, [0, True]), (1, [0, 1.0])):
        damaged = json.loads(json.dumps(stored))
        damaged["unresolved"][at][2] = bad
        with pytest.raises(MALFORMED):
            report_from_json(damaged)
    for bad_site in (3, -1, True):
        damaged = json.loads(json.dumps(stored))
        damaged["unresolved"][3][1] = bad_site
        with pytest.raises(MALFORMED):
            report_from_json(damaged)
