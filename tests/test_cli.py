"""Tests for the ``importpolicy`` command line (check, why, cache clear) and the check contract.

Most tests call :func:`flake8_importpolicy.cli.main` in-process with the project as the working
directory; a few run ``python -m flake8_importpolicy`` in a subprocess (module entry point, and
``PYTHONPATH`` for third-party packages, which the engine learns by querying the interpreter).
Where the tool is wrong the test is an ``xfail(strict=True)`` whose reason starts with ``BUG:``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import shutil
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import (
    DISTRIBUTIONS,
    DISTRIBUTIONS_LIGHT,
    HANG_CATCHER,
    INSTALLED_SITES,
    INSTALLED_TP,
    fixture_dirs,
)

from flake8_importpolicy.answers.jsonfile import read_json_sealed, write_json_atomic
from flake8_importpolicy import __version__
from flake8_importpolicy.cli import EXIT_STATUS, build_parser, main

POLICY = """
[heavy]
"app.heavy" = "slow to import"
[light."app.light"]
reason = "must start fast"
"""

BASIC = {
    "policy.toml": POLICY,
    "app/__init__.py": "",
    "app/heavy.py": "",
    "app/mid.py": "X = 1\nimport app.heavy\n",
    "app/light.py": "import os\nfrom app.mid import X\n",
}

CACHE = ".importpolicy_cache"


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def age(root: Path, seconds: float = 100.0) -> None:
    """Move every mtime under ``root`` into the past, so later edits always change an mtime."""
    past = time.time() - seconds
    for directory, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            os.utime(Path(directory) / name, (past, past), follow_symlinks=False)
    os.utime(root, (past, past))


Run = Callable[..., tuple[int, str, str]]


@pytest.fixture()
def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Run:
    """``run(cwd, *args)`` -> ``(exit code, stdout, stderr)`` of ``importpolicy args`` in ``cwd``."""

    def _run(cwd: Path, *args: str) -> tuple[int, str, str]:
        monkeypatch.chdir(cwd)
        capsys.readouterr()
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse usage errors
            code = exc.code if isinstance(exc.code, int) else 2
        out, err = capsys.readouterr()
        return code, out, err

    return _run


@pytest.fixture()
def basic(tmp_path: Path) -> Path:
    return write(tmp_path / "proj", BASIC)


def report(run: Run, cwd: Path, *args: str) -> dict[str, list[dict[str, object]]]:
    code, out, err = run(cwd, "check", "--format", "json", *args)
    assert code in (0, 1), err
    data: dict[str, list[dict[str, object]]] = json.loads(out)
    return data


# -- exit codes and output -----------------------------------------------------------------------


def test_clean_project_exits_0(run: Run, tmp_path: Path) -> None:
    root = write(tmp_path, {**BASIC, "app/light.py": "import os\n"})
    code, out, err = run(root, "check", "--no-cache")
    assert code == 0
    assert out == "OK: 1 light module checked, no forbidden import-time imports.\n"
    assert err == ""


def test_violation_exits_1_with_text_chain(run: Run, basic: Path) -> None:
    code, out, err = run(basic, "check", "--no-cache")
    assert code == 1, err
    assert out.splitlines() == [
        "app/light.py:2:1: IPL001 light module app.light imports app.heavy at import time "
        "(slow to import)",
        "    app/light.py:2: app.light -> app.mid (from-import)",
        "    app/mid.py:2: app.mid -> app.heavy (import)",
        "",
        "Found 1 violation in 1 light module.",
    ]


def test_json_shape(run: Run, basic: Path) -> None:
    data = report(run, basic, "--no-cache")
    assert list(data) == ["violations", "problems", "unresolved"]
    assert data["problems"] == []
    [violation] = data["violations"]
    assert list(violation) == [
        "code", "light", "heavy", "pattern", "reason", "path", "line", "col", "also", "covers", "chain",
    ]
    assert violation == {
        "code": "IPL001", "light": "app.light", "heavy": "app.heavy", "pattern": "app.heavy",
        "reason": "slow to import", "path": "app/light.py", "line": 2, "col": 0, "also": [], "covers": [],
        "chain": [
            {"module": "app.light", "path": "app/light.py", "line": 2, "col": 0,
             "kind": "from-import", "imported": "app.mid", "flags": []},
            {"module": "app.mid", "path": "app/mid.py", "line": 2, "col": 0, "kind": "import",
             "imported": "app.heavy", "flags": []},
        ],
    }


def test_json_problem_shape_and_relative_paths(run: Run, tmp_path: Path) -> None:
    root = write(tmp_path, {
        **BASIC,
        "policy.toml": POLICY + '[light."app.gone"]\nreason = "renamed"\n',
        "app/light.py": "import app.broken\n",
        "app/broken.py": "x = (\n",
    })
    data = report(run, root, "--no-cache")
    assert data["violations"] == []
    assert data["problems"] == [
        {"code": "IPL005", "message": data["problems"][0]["message"], "path": "app/broken.py",
         "line": 1},
        {"code": "IPL003", "message": "light pattern 'app.gone' matches no module",
         "path": "policy.toml", "line": 5},
    ] or data["problems"] == [
        {"code": "IPL003", "message": "light pattern 'app.gone' matches no module",
         "path": "policy.toml", "line": 5},
        {"code": "IPL005", "message": data["problems"][1]["message"], "path": "app/broken.py",
         "line": 1},
    ]
    assert all(list(problem) == ["code", "message", "path", "line"] for problem in data["problems"])


def test_flags_and_col_in_json(run: Run, tmp_path: Path) -> None:
    root = write(tmp_path, {**BASIC, "app/light.py": """
        import os
        if os.environ.get(os.sep[:0] + "X"):
            try:
                import app.heavy
            except ImportError:
                pass
    """})
    [violation] = report(run, root, "--no-cache")["violations"]
    assert (violation["line"], violation["col"]) == (4, 8)
    assert violation["chain"] == [
        {"module": "app.light", "path": "app/light.py", "line": 4, "col": 8, "kind": "import",
         "imported": "app.heavy", "flags": ["conditional", "guarded"]},
    ]


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ("[heavy\n", "invalid TOML"),
        ('[heavy]\n"a" = 1\n', "expected a reason string"),
        ('[settings]\nexternl = "stop"\n', "did you mean 'external'"),
    ],
)
def test_broken_policy_exits_2_without_traceback(
    run: Run, tmp_path: Path, policy: str, message: str
) -> None:
    write(tmp_path, {"policy.toml": policy})
    code, out, err = run(tmp_path, "check")
    assert code == 2
    assert out == ""
    assert err.startswith("importpolicy: ") and message in err
    assert "Traceback" not in err


def test_missing_policy_exits_2(run: Run, tmp_path: Path) -> None:
    code, out, err = run(tmp_path, "check")
    assert code == 2 and "no policy.toml or pyproject.toml" in err
    code, out, err = run(tmp_path, "check", "--policy", "nope.toml")
    assert code == 2 and "nope.toml" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "args",
    [
        ("check", "--format", "xml"),
        ("check", "--target-version", "3"),
        ("check", "--target-version", "3.x"),
        ("frobnicate",),
        (),
        ("cache",),
    ],
)
def test_usage_errors_exit_2(run: Run, basic: Path, args: tuple[str, ...]) -> None:
    code, out, err = run(basic, *args)
    assert code == 2
    assert "usage:" in err


def test_unknown_interpreter_exits_2(run: Run, basic: Path) -> None:
    code, out, err = run(basic, "check", "--no-cache", "--interpreter", str(basic / "no-python"))
    assert code == 2 and "cannot run interpreter" in err and "Traceback" not in err


def _codes_of(text: str) -> set[str]:
    """``IPL001, IPL003-IPL005`` -> {IPL001, IPL003, IPL004, IPL005}."""
    found = set()
    for first, last in re.findall(r"IPL(\d{3})(?:-IPL(\d{3}))?", text):
        found |= {f"IPL{n:03d}" for n in range(int(first), int(last or first) + 1)}
    return found


def test_exit_status_text_is_what_check_does(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """EXIT_STATUS, the one text of what each exit status means, is the --help epilog, and the codes
    it says exit 1 are those that do: on every fixture, ``check`` exits 1 exactly when it reports one
    of them (IPL006 only with ``--unresolved error``), 0 otherwise."""
    help_text = " ".join(build_parser().format_help().split())
    assert " ".join(EXIT_STATUS.split()) in help_text
    findings = EXIT_STATUS.split("; 1 findings (")[1].split("); 2 ")[0]
    always, conditional = findings.split(", and ")
    failing, with_error = _codes_of(always), _codes_of(conditional)
    assert (failing, with_error) == ({"IPL001", "IPL003", "IPL004", "IPL005", "IPL007", "IPL008",
                                      "IPL009"}, {"IPL006"})
    seen: set[str] = set()
    for root in fixture_dirs():
        site = root / "site-packages"
        if site.is_dir():
            monkeypatch.setenv("PYTHONPATH", str(site))
        else:
            monkeypatch.delenv("PYTHONPATH", raising=False)
        for extra, fails in (([], failing), (["--unresolved", "error"], failing | with_error)):
            code = main(["check", "--policy", str(root / "policy.toml"), "--no-cache",
                         "--format", "json", *extra])
            report = json.loads(capsys.readouterr().out)
            reported = {f["code"] for key in ("violations", "problems", "unresolved")
                        for f in report[key]}
            seen |= reported
            assert code == (1 if reported & fails else 0), (root.name, extra, sorted(reported))
    assert seen >= failing | with_error  # every code the text names is met on some fixture


# -- policy discovery ----------------------------------------------------------------------------


def test_policy_found_from_subdirectory_and_paths_stay_relative_to_it(
    run: Run, basic: Path
) -> None:
    deep = basic / "app" / "nested" / "dir"
    deep.mkdir(parents=True)
    code, out, err = run(deep, "check", "--no-cache", "--format", "json")
    assert code == 1, err
    assert json.loads(out)["violations"][0]["path"] == "app/light.py"


def test_explicit_policy_is_relative_to_cwd(run: Run, basic: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code, out, err = run(elsewhere, "check", "--no-cache", "--policy", "../proj/policy.toml")
    assert code == 1, err
    assert out.startswith("app/light.py:2:1: IPL001")


def test_pyproject_table_and_policy_toml_precedence(run: Run, tmp_path: Path) -> None:
    pyproject = """
        [project]
        name = "demo"
        [tool.importpolicy.heavy]
        "app.heavy" = "from pyproject"
        [tool.importpolicy.light."app.light"]
        reason = "r"
    """
    root = write(tmp_path, {**BASIC, "pyproject.toml": pyproject})
    (root / "policy.toml").unlink()
    code, out, _ = run(root, "check", "--no-cache")
    assert code == 1 and "(from pyproject)" in out
    # policy.toml in the same directory wins over pyproject.toml.
    write(root, {"policy.toml": '[heavy]\n"app.other" = "x"\n[light."app.light"]\nreason = "r"\n',
                 "app/other.py": ""})
    code, out, _ = run(root, "check", "--no-cache")
    assert code == 0, out
    code, out, _ = run(root, "check", "--no-cache", "--policy", "pyproject.toml")
    assert code == 1 and "(from pyproject)" in out


def test_pyproject_without_table_does_not_stop_discovery(run: Run, basic: Path) -> None:
    sub = write(basic / "sub", {"pyproject.toml": '[project]\nname = "x"\n'})
    code, out, err = run(sub, "check", "--no-cache")
    assert code == 1, err
    assert "IPL001" in out


def test_pyproject_problem_lines(run: Run, tmp_path: Path) -> None:
    root = write(tmp_path, {
        "pyproject.toml": '[tool.importpolicy.heavy]\n"a" = "x"\n'
                          '[tool.importpolicy.light."nothing.here"]\nreason = "r"\n',
    })
    data = report(run, root, "--no-cache")
    assert data["problems"] == [{
        "code": "IPL003", "message": "light pattern 'nothing.here' matches no module",
        "path": "pyproject.toml", "line": 3,
    }]


# -- targets -------------------------------------------------------------------------------------


def test_target_version_changes_a_version_branch(run: Run, tmp_path: Path) -> None:
    root = write(tmp_path, {**BASIC, "app/compat.py": "", "app/light.py": """
        import sys
        if sys.version_info >= (3, 9):
            import app.compat
        else:
            import app.heavy
    """})
    assert run(root, "check", "--no-cache")[0] == 0
    code, out, _ = run(root, "check", "--no-cache", "--target-version", "3.8")
    assert code == 1 and out.startswith("app/light.py:5:5: IPL001")
    # Several versions: the union of their branches.
    assert run(root, "check", "--no-cache", "--target-version", "3.8", "--target-version", "3.12")[0] == 1
    # With the cache, a different target must not reuse the other target's answer.
    assert run(root, "check")[0] == 0
    assert run(root, "check", "--target-version", "3.8")[0] == 1
    assert run(root, "check")[0] == 0


# -- caches --------------------------------------------------------------------------------------


def test_no_cache_writes_nothing(run: Run, basic: Path) -> None:
    run(basic, "check", "--no-cache")
    run(basic, "why", "app.light", "--no-cache")
    assert not (basic / CACHE).exists()


def test_cache_is_tagged_and_warm_runs_are_identical(run: Run, basic: Path) -> None:
    cold = run(basic, "check")
    cache = basic / CACHE
    assert (cache / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert (cache / ".gitignore").read_text().splitlines()[-1] == "*"
    warm = run(basic, "check")
    assert warm == cold
    assert run(basic, "check", "--format", "json") == run(basic, "check", "--format", "json")
    assert run(basic, "check", "--no-cache") == cold


def test_warm_run_sees_an_import_leaving_type_checking(run: Run, tmp_path: Path) -> None:
    root = write(tmp_path, {**BASIC, "app/deep.py": """
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            import app.heavy
    """, "app/mid.py": "X = 1\nimport app.deep\n"})
    age(root)
    assert run(root, "check")[0] == 0
    assert run(root, "check")[0] == 0
    write(root, {"app/deep.py": "from typing import TYPE_CHECKING\nimport app.heavy\n"})
    code, out, _ = run(root, "check")
    assert code == 1
    assert "app/deep.py:2: app.deep -> app.heavy (import)" in out


def test_warm_run_sees_a_new_file_that_shadows_resolution(run: Run, tmp_path: Path) -> None:
    root = write(tmp_path, {**BASIC, "app/light.py": "import json\nimport app.mid\n",
                            "app/mid.py": "X = 1\n"})
    age(root)
    assert run(root, "check")[0] == 0
    # A package app/mid/ beats the module app/mid.py.
    write(root, {"app/mid/__init__.py": "import app.heavy\n"})
    code, out, _ = run(root, "check")
    assert code == 1 and "app/mid/__init__.py:1: app.mid -> app.heavy" in out
    (root / "app/mid/__init__.py").unlink()
    (root / "app/mid").rmdir()
    age(root)
    assert run(root, "check")[0] == 0
    # A first-party json.py shadows the standard library's json.
    write(root, {"json.py": "import app.heavy\n"})
    code, out, _ = run(root, "check")
    assert code == 1 and "json.py:1: json -> app.heavy" in out


def test_corrupt_cache_entries_are_recomputed(run: Run, basic: Path) -> None:
    expected = run(basic, "check")
    files = list((basic / CACHE).rglob("*.json"))  # the entries; the tag marks the directory as ours
    assert any(p.parent.name == "answers" for p in files)
    for path in files:
        with path.open("r+b") as handle:
            handle.truncate(3)
    assert run(basic, "check") == expected
    for path in (basic / CACHE).rglob("*.json"):
        path.write_text("[]")
    assert run(basic, "check") == expected
    for path in (basic / CACHE).rglob("*.json"):
        path.write_text('{"format": 1, "directories": [], "files": [], "report": {}}')
    assert run(basic, "check") == expected


def test_answers_entry_with_wrong_types_is_recomputed(run: Run, basic: Path) -> None:
    expected = run(basic, "check")
    [entry] = (basic / CACHE / "answers").glob("*.json")
    data: Any = read_json_sealed(entry)
    hop = data["report"]["violations"][0][10][0]  # the chain's first hop, by its place in the table
    data["report"]["hops"][hop][6] = "not-a-list"
    write_json_atomic(entry, data)  # sealed again: the report's own check refuses it
    assert run(basic, "check") == expected


def test_unusable_cache_directory_is_silent(run: Run, basic: Path) -> None:
    (basic / CACHE).write_text("a file where the cache directory should be")
    code, out, err = run(basic, "check")
    assert code == 1 and "IPL001" in out and err == ""
    code, out, err = run(basic, "why", "app.light")
    assert code == 0 and err == ""


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_read_only_cache_directory_is_silent(run: Run, basic: Path) -> None:
    (basic / CACHE).mkdir()
    (basic / CACHE).chmod(0o555)
    try:
        code, out, err = run(basic, "check")
        assert code == 1 and err == ""
    finally:
        (basic / CACHE).chmod(0o755)


def test_cache_that_refuses_writes_is_silent(
    run: Run, basic: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only cache directory (simulated: root ignores permissions): no output, same answer."""
    import tempfile

    expected = run(basic, "check", "--no-cache")
    cache = str(basic / CACHE)

    def inside(path: object) -> bool:
        return str(path).startswith(cache)

    real_mkdir, real_write, real_mkstemp = Path.mkdir, Path.write_text, tempfile.mkstemp
    real_mkdtemp = tempfile.mkdtemp

    def mkdir(self: Path, *args: object, **kwargs: object) -> None:
        if inside(self):
            raise PermissionError(13, "Permission denied", str(self))
        real_mkdir(self, *args, **kwargs)  # type: ignore[arg-type]

    def write_text(self: Path, *args: object, **kwargs: object) -> int:
        if inside(self):
            raise PermissionError(13, "Permission denied", str(self))
        return real_write(self, *args, **kwargs)  # type: ignore[arg-type]

    def mkstemp(*args: object, **kwargs: object) -> tuple[int, str]:
        if inside(kwargs.get("dir")):
            raise PermissionError(13, "Permission denied")
        return real_mkstemp(*args, **kwargs)  # type: ignore[arg-type]

    def mkdtemp(*args: object, **kwargs: object) -> str:  # a new cache directory is made beside it
        if str(kwargs.get("dir")) == str(basic):
            raise PermissionError(13, "Permission denied")
        return real_mkdtemp(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "mkdir", mkdir)
    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp)
    monkeypatch.setattr(Path, "write_text", write_text)
    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    assert run(basic, "check") == expected
    assert run(basic, "check") == expected
    assert run(basic, "why", "app.light")[0] == 0
    assert not (basic / CACHE).exists()


def test_cache_clear(run: Run, basic: Path) -> None:
    run(basic, "check")
    assert (basic / CACHE).is_dir()
    code, out, _ = run(basic, "cache", "clear")
    assert (code, out) == (0, "removed .importpolicy_cache\n")
    assert not (basic / CACHE).exists()
    assert run(basic, "cache", "clear")[:2] == (0, "no cache at .importpolicy_cache\n")
    assert (basic / "app" / "light.py").is_file()


def test_cache_without_parsed_files_is_still_tagged_and_clearable(run: Run, tmp_path: Path) -> None:
    root = write(tmp_path, {"policy.toml": '[heavy]\n"a" = "x"\n[light."gone"]\nreason = "r"\n'})
    assert run(root, "check")[0] == 1  # IPL003 only: no source file is parsed
    if (root / CACHE).exists():
        assert (root / CACHE / "CACHEDIR.TAG").is_file()
        assert (root / CACHE / ".gitignore").is_file()
        run(root, "cache", "clear")
        assert not (root / CACHE).exists()


CACHE_DIR_OF_ITS_OWN = '; the cache needs a directory of its own, e.g. ".importpolicy_cache"'


def test_cache_dir_at_project_root_is_a_policy_error(run: Run, tmp_path: Path) -> None:
    """``cache clear`` with ``cache-dir = "."`` deleted project directories named like its
    subdirectories (``facts``, ``answers``); the project root is no cache directory."""
    root = write(tmp_path / "proj", {**BASIC, "policy.toml": '[settings]\ncache-dir = "."\n' + POLICY,
                                     ".gitignore": "build/\n", "facts/__init__.py": ""})
    expected = (2, "", "importpolicy: policy.toml is not valid (1 problem):\n"
                f'  settings.cache-dir: "." is the policy file\'s directory{CACHE_DIR_OF_ITS_OWN}\n')
    assert run(root, "check") == expected
    assert run(root, "cache", "clear") == expected
    assert (root / ".gitignore").read_text() == "build/\n"
    assert (root / "facts" / "__init__.py").is_file() and (root / "app" / "light.py").is_file()


def test_warm_run_sees_an_unreadable_file_become_readable(run: Run, tmp_path: Path) -> None:
    root = write(tmp_path / "proj", {**BASIC, "app/light.py": "import app.linked\n"})
    target = tmp_path / "target.py"
    (root / "app" / "linked.py").symlink_to(target)
    code, out, _ = run(root, "check")
    assert code == 1 and "IPL005" in out
    target.write_text("import app.heavy\n")
    assert run(root, "check") == run(root, "check", "--no-cache")


# -- why -----------------------------------------------------------------------------------------


def test_why_text_tree(run: Run, basic: Path) -> None:
    code, out, err = run(basic, "why", "app.light")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "app.light (app/light.py)"
    assert lines[1] == "└── app.mid  [from-import at app/light.py:2]"
    assert lines[2] == "    └── app.heavy  [import at app/mid.py:2]  FORBIDDEN: slow to import"
    assert lines[3].startswith("import app.light runs ") and "1 forbidden module reached" in lines[3]


def test_why_json_closure(run: Run, basic: Path) -> None:
    code, out, err = run(basic, "why", "app.light", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert list(data) == ["count", "modules", "unresolved"]
    modules = {m["module"]: m for m in data["modules"]}
    assert all(list(m) == ["module", "path", "chain"] for m in data["modules"])
    assert {"app", "app.light", "app.mid", "app.heavy", "os"} <= set(modules)
    assert modules["app.light"] == {"module": "app.light", "path": "app/light.py", "chain": []}
    assert modules["os"]["path"] is None  # frozen
    assert modules["app"]["chain"][0]["kind"] == "parent-package"
    assert [hop["imported"] for hop in modules["app.heavy"]["chain"]] == ["app.mid", "app.heavy"]


def test_why_heavy_pattern(run: Run, basic: Path) -> None:
    code, out, err = run(basic, "why", "app.light", "--heavy", "app.mid", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert list(data) == ["module", "count", "forbidden", "unresolved", "problems"]
    assert [f["module"] for f in data["forbidden"]] == ["app.mid"]
    assert data["forbidden"][0]["pattern"] == "app.mid"
    code, out, err = run(basic, "why", "app.light", "--heavy", "app.*")
    assert code == 0 and "FORBIDDEN" in out


def test_why_counts_modules_and_functions_and_groups_a_forbidden_package(
    run: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Function nodes are not counted as modules, and a forbidden package's submodules are that
    package (as check's "also"), not forbidden modules of their own."""
    root = write(tmp_path, {**SEVERAL_HEAVY, "app/light.py": """
        import app.heavy.a
        import app.heavy.b


        def setup():
            import app.mid


        setup()
    """, "app/mid.py": "X = 1\n"})
    code, out, err = run(root, "why", "app.light")
    assert code == 0, err
    assert out.splitlines()[-1] == (
        "import app.light runs 5 other modules and 1 function called at import time "
        "(max-modules counts 6); "
        "1 forbidden module reached.")
    assert "└── app.heavy  [parent-package at app/light.py:1]  FORBIDDEN: slow to import" in out
    assert "app.heavy.a" not in out and "app.heavy.b" not in out
    code, out, err = run(root, "why", "app.light", "--format", "json", "--heavy", "app.heavy")
    assert [f["module"] for f in json.loads(out)["forbidden"]] == ["app.heavy"]
    with pytest.raises(SystemExit):
        main(["why", "--help"])
    assert "the shortest import-time chain from MODULE to each forbidden module it reaches" in " ".join(
        capsys.readouterr().out.split())


def test_why_lists_unknown_imports_and_problems(run: Run, tmp_path: Path) -> None:
    root = write(tmp_path, {**BASIC, "app/light.py": """
        import importlib
        import os
        import app.broken
        name = os.environ["NAME"]
        importlib.import_module(name)
    """, "app/broken.py": "def f(:\n"})
    code, out, _ = run(root, "why", "app.light")
    assert code == 0
    assert "not resolved: app/light.py:5: dynamic-import importlib.import_module(name)" in out
    assert "cannot analyse app.broken: line 1:" in out


WHY_ARGS = [["app.light"], ["app.light", "--format", "json"], ["app.light", "--heavy", "app.mid"],
            ["app.mid", "--format", "mermaid"]]


def test_warm_why_answers_without_the_engine(
    run: Run, basic: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 30 item 6: a warm ``why`` took 3-4.5 s CPU where a warm ``check`` took 0.5 s (it read,
    hashed and decoded every module of the closure, and asked the interpreter again); it answers
    from its answer index as ``check`` does, without the engine: no source file is read or parsed."""
    from flake8_importpolicy.analysis import engine, sources
    from flake8_importpolicy.answers import compute

    age(basic)
    expected = {" ".join(args): run(basic, "why", *args) for args in WHY_ARGS}
    assert all(code == 0 for code, _, _ in expected.values()), expected

    def no_engine(*args: object, **kwargs: object) -> None:
        raise AssertionError("the engine ran")

    def no_query(*args: object, **kwargs: object) -> None:
        raise AssertionError("the interpreter was asked")

    monkeypatch.setattr(engine.PolicyEngine, "__init__", no_engine)
    monkeypatch.setattr(sources, "query_interpreter", no_query)
    monkeypatch.setattr(compute, "query_interpreter", no_query)
    for args in WHY_ARGS:
        assert run(basic, "why", *args) == expected[" ".join(args)]
    monkeypatch.undo()
    # an edit is seen: the chain through app.mid is gone
    (basic / "app" / "mid.py").write_text("X = 1\n")
    code, out, _ = run(basic, "why", "app.light")
    assert code == 0 and "FORBIDDEN" not in out and "no forbidden module is reached" in out
    assert run(basic, "why", "app.light", "--no-cache")[1] == out
    assert (basic / CACHE / "why").is_dir()  # cache clear knows why's answers
    assert run(basic, "cache", "clear")[:2] == (0, "removed .importpolicy_cache\n")


def test_why_missing_its_answer_reads_every_fact_from_the_cache(
    run: Run, basic: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``why`` with no answer of its own yet (another module, pattern or format than before) reads
    the facts ``check`` cached and the cached interpreter facts: nothing is parsed, the interpreter
    is not asked (counted through the facts source's own ``cached_facts``)."""
    from flake8_importpolicy.analysis import sources
    from flake8_importpolicy.answers import compute

    assert run(basic, "check")[0] == 1
    extracted: list[bool] = []
    real = sources.cached_facts

    def counted(*args: Any, **kwargs: Any) -> Any:
        found = real(*args, **kwargs)
        extracted.append(found[3])
        return found

    def no_query(*args: object, **kwargs: object) -> None:
        raise AssertionError("the interpreter was asked")

    monkeypatch.setattr(sources, "cached_facts", counted)
    monkeypatch.setattr(sources, "query_interpreter", no_query)
    monkeypatch.setattr(compute, "query_interpreter", no_query)
    code, out, err = run(basic, "why", "app.light", "--heavy", "app.heavy")
    assert code == 0, err
    assert "FORBIDDEN" in out
    assert extracted and not any(extracted)


@pytest.mark.parametrize("module", ["app.nope", "nowhere_at_all", "a-b", "app..x"])
def test_why_unknown_module_exits_2(run: Run, basic: Path, module: str) -> None:
    code, out, err = run(basic, "why", module)
    assert code == 2 and out == "" and "importpolicy: error:" in err


def test_why_bad_heavy_pattern_exits_2(run: Run, basic: Path) -> None:
    code, _, err = run(basic, "why", "app.light", "--heavy", "app.h*")
    assert code == 2 and "invalid module pattern" in err


def test_python_dash_m(basic: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "flake8_importpolicy", "check", "--no-cache", "--format", "json"],
        cwd=basic, capture_output=True, text=True, timeout=HANG_CATCHER, check=False,
    )
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["violations"][0]["heavy"] == "app.heavy"
    version = subprocess.run(
        [sys.executable, "-m", "flake8_importpolicy", "--version"],
        capture_output=True, text=True, timeout=HANG_CATCHER, check=False,
    )
    assert version.returncode == 0 and version.stdout.startswith("importpolicy ")


COMMANDS = [["check"], ["suggest"], ["why"], ["verify"], ["presets"], ["lsp"], ["bisect"], ["fix"],
            ["cache"], ["cache", "clear"]]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_has_version_and_its_exit_statuses_in_help(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """``-V``/``--version`` on every command, as flake8 and ruff have them; every ``--help`` ends
    with what its exit statuses mean, 2 and 3 as :data:`EXIT_STATUS` says them."""
    from flake8_importpolicy.cli import COMMAND_EXIT_STATUS

    for flag in ("-V", "--version"):
        with pytest.raises(SystemExit) as stopped:
            main([*command, flag])
        assert (stopped.value.code, capsys.readouterr().out) == (0, f"importpolicy {__version__}\n")
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    epilog = COMMAND_EXIT_STATUS[command[0]]
    assert shown.endswith(" ".join(epilog.split())), shown
    assert epilog.startswith("Exit status: 0 ") and "; 3 an internal error" in epilog
    assert epilog == EXIT_STATUS or "; 2 " in epilog


def _on_a_terminal(argv: list[str], cwd: Path, env: dict[str, str]) -> str:
    """What ``argv`` writes to stdout when stdout is a terminal (a pseudo-terminal)."""
    import pty

    leader, follower = pty.openpty()
    chunks = []
    try:  # read while it writes: a pseudo-terminal holds a few KiB (SARIF is more)
        process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=follower, stderr=subprocess.DEVNULL)
        os.close(follower)
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the writer is gone and everything was read
                break
            if not chunk:
                break
            chunks.append(chunk)
        process.wait(timeout=HANG_CATCHER)
    finally:
        os.close(leader)
    done = process
    assert done.returncode == 1
    return b"".join(chunks).decode().replace("\r\n", "\n")


def test_colour_on_a_terminal_never_in_a_pipe_or_a_machine_format(basic: Path) -> None:
    """The text report on a terminal colours paths, codes and the summary; ``NO_COLOR`` turns it
    off (and wins over ``FORCE_COLOR``), ``FORCE_COLOR`` turns it on in a pipe; a pipe, JSON, SARIF
    and the GitHub format are never coloured."""
    argv = [sys.executable, "-m", "flake8_importpolicy", "check", "--no-cache"]
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "TERM")}
    coloured = _on_a_terminal(argv, basic, env)
    assert coloured.splitlines()[0] == (
        "\x1b[1mapp/light.py\x1b[0m:2:1: \x1b[1;31mIPL001\x1b[0m light module app.light imports "
        "app.heavy at import time (slow to import)")
    assert coloured.splitlines()[-1] == "\x1b[1;31mFound 1 violation in 1 light module.\x1b[0m"
    plain = subprocess.run(argv, cwd=basic, env=env, capture_output=True, text=True,
                           timeout=HANG_CATCHER).stdout
    assert "\x1b" not in plain and plain == coloured.replace("\x1b[1m", "").replace(
        "\x1b[1;31m", "").replace("\x1b[0m", "")
    assert _on_a_terminal(argv, basic, {**env, "NO_COLOR": "1"}) == plain
    assert _on_a_terminal(argv, basic, {**env, "TERM": "dumb"}) == plain
    assert _on_a_terminal(argv, basic, {**env, "NO_COLOR": "1", "FORCE_COLOR": "1"}) == plain
    forced = subprocess.run(argv, cwd=basic, env={**env, "FORCE_COLOR": "1"}, capture_output=True,
                            text=True, timeout=HANG_CATCHER).stdout
    assert forced == coloured
    for machine in ("json", "sarif", "github"):
        out = _on_a_terminal([*argv, "--format", machine], basic, {**env, "FORCE_COLOR": "1"})
        assert "\x1b" not in out, machine


def test_command_line_output_is_complete_and_a_closed_pipe_is_no_traceback(basic: Path) -> None:
    """The command line leaves with ``os._exit`` after flushing (``cli.run``): what it printed must
    all arrive, and a reader that goes away early must not produce a traceback."""
    many = {f"app/light{i}.py": "from app.mid import X\n" for i in range(300)}
    lights = "".join(f'[light."app.light{i}"]\nreason = "r"\n' for i in range(300))
    root = write(basic.parent / "many", {**BASIC, **many})
    (root / "policy.toml").write_text((basic / "policy.toml").read_text() + lights)
    argv = [sys.executable, "-m", "flake8_importpolicy", "check", "--no-cache", "--format", "json"]
    done = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=HANG_CATCHER, check=False)
    assert done.returncode == 1, done.stderr
    assert len(json.loads(done.stdout)["violations"]) == 301  # all of it, parseable
    with subprocess.Popen(argv, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.read(10)
        proc.stdout.close()  # the reader goes away while the output is being written
        err = proc.stderr.read().decode()
        code = proc.wait(timeout=HANG_CATCHER)
    assert code in (1, 2) and "Traceback" not in err, err  # 2 when the write itself failed


# -- the check contract: noqa, ignore, allow, forbid, patterns -----------------------------------


SEVERAL_HEAVY = {  # app.heavy is a package: each statement can run a forbidden module of its own
    **{name: text for name, text in BASIC.items() if name != "app/heavy.py"},
    "app/heavy/__init__.py": "",
    **{f"app/heavy/{name}.py": "X = 1\n" for name in "abcde"},
}


def test_noqa_on_the_first_line_of_a_multiline_statement(run: Run, tmp_path: Path) -> None:
    root = write(tmp_path, {**SEVERAL_HEAVY, "app/light.py": """
        from app.heavy.a import (  # noqa: IPL001
            X,
        )
        from app.heavy.b import (
            X as Y,  # noqa
        )
        import app.heavy.c  # noqa
        import app.heavy.d as H  # NOQA:IPL001
        import app.heavy.e as I  # noqa: E501
    """})
    data = report(run, root, "--no-cache")
    assert sorted(v["line"] for v in data["violations"]) == [4, 9]
    code, out, _ = run(root, "check", "--no-cache")
    assert out.rstrip().endswith("Found 2 violations in 1 light module, 3 suppressed by noqa.")


ONE_CAUSE = {  # CPython runs app (and with it app.heavy) once, for the parent package of app.sub
    "policy.toml": """
        [heavy]
        "app.heavy" = "slow to import"
        "app.gpu" = "initialises the GPU"
        [light."app.sub.light"]
        reason = "must start fast"
    """,
    "app/__init__.py": "import app.heavy\n",
    "app/heavy.py": "",
    "app/gpu.py": "",
    "app/other.py": "",
    "app/sub/__init__.py": "",
    "app/sub/helper.py": "",
    "app/sub/light.py": """\
        import app.sub.helper
        from app.sub import helper
        import app.other
        from app import other
        import app.gpu
        from app import gpu
    """,
}


def test_one_cause_one_report(run: Run, tmp_path: Path) -> None:
    """A 6-line light module whose parent package runs the heavy module: CPython runs it once, so one
    report, listing the later statements that reach nothing new; a new forbidden module is a new
    report."""
    root = write(tmp_path, ONE_CAUSE)
    code, out, _ = run(root, "check", "--no-cache")
    assert (code, out) == (1, """\
app/sub/light.py:1:1: IPL001 light module app.sub.light imports app.heavy at import time (slow to import)
    app/sub/light.py:1: app.sub.light -> app (parent-package)
    app/__init__.py:1: app -> app.heavy (import)
    same cause: lines 1, 2, 3, 4 reach only what this statement already ran

app/sub/light.py:5:1: IPL001 light module app.sub.light imports app.gpu at import time (initialises the GPU)
    app/sub/light.py:5: app.sub.light -> app.gpu (import)
    same cause: line 6 reaches only what this statement already ran

Found 2 violations in 1 light module.
""")
    data = report(run, root, "--no-cache")
    assert [(v["line"], v["covers"]) for v in data["violations"]] == [(1, [1, 2, 3, 4]), (5, [6])]
    # noqa on the kept statement suppresses it, and does not bring back the statements it covers
    edit = ONE_CAUSE["app/sub/light.py"].replace("import app.sub.helper", "import app.sub.helper  # noqa")
    write(root, {"app/sub/light.py": edit})
    assert [v["line"] for v in report(run, root, "--no-cache")["violations"]] == [5]


ONE_PACKAGE = {  # ds/__init__.py imports none of its submodules: each import runs something new
    "policy.toml": """
        [heavy]
        "ds.cuda" = "initialises the GPU"
        "ds" = "deepspeed: slow to import"
        "torchy" = "torch"
        [light."app.light"]
        reason = "must start fast"
    """,
    "app/__init__.py": "",
    "ds/__init__.py": "",
    "ds/ops.py": "",
    "ds/cuda.py": "",
    "torchy.py": "",
    "app/light.py": """\
        import ds.ops
        import json
        import ds
        import torchy
        from ds import cuda
    """,
}


def test_one_forbidden_package_one_entry(run: Run, tmp_path: Path) -> None:
    """The statements of one light module that reach one forbidden package are one entry of the text
    report: ``import ds.ops`` runs ``ds`` (the entry; ``import ds`` reaches nothing new), ``from ds
    import cuda`` runs ``ds.cuda`` (also reaches it, with its own reason: the first matching
    ``[heavy]`` key's); ``torchy`` is an entry of its own. The interpreter as the oracle: each
    statement runs what it is listed for. flake8 and JSON keep one finding per statement."""
    root = write(tmp_path, ONE_PACKAGE)
    code, out, _ = run(root, "check", "--no-cache")
    assert (code, out) == (1, """\
app/light.py:1:1: IPL001 light module app.light imports ds at import time (deepspeed: slow to import)
    app/light.py:1: app.light -> ds (parent-package)
    same cause: line 3 reaches only what this statement already ran
    also reaches ds.cuda (initialises the GPU), from app/light.py:5:1:
        app/light.py:5: app.light -> ds.cuda (from-import)

app/light.py:4:1: IPL001 light module app.light imports torchy at import time (torch)
    app/light.py:4: app.light -> torchy (import)

Found 3 violations in 1 light module.
""")
    for line in (1, 5):
        source = "".join(textwrap.dedent(ONE_PACKAGE["app/light.py"]).splitlines(True)[:line])
        done = subprocess.run([sys.executable, "-c", source + "import sys; print(sorted(m for m in "
                               "sys.modules if m.split('.')[0] in ('ds', 'torchy')))"],
                              cwd=root, capture_output=True, text=True, timeout=HANG_CATCHER)
        assert done.stdout == {1: "['ds', 'ds.ops']\n", 5: "['ds', 'ds.cuda', 'ds.ops', 'torchy']\n"}[line]
    assert [(v["line"], v["heavy"]) for v in report(run, root, "--no-cache")["violations"]] == [
        (1, "ds"), (4, "torchy"), (5, "ds.cuda")]
    flake8 = subprocess.run([sys.executable, "-m", "flake8", "--select", "IPL", "app/light.py"],
                            cwd=root, capture_output=True, text=True, timeout=HANG_CATCHER)
    assert [line.split(" IPL001 ")[0] for line in flake8.stdout.splitlines()] == [
        "app/light.py:1:1:", "app/light.py:4:1:", "app/light.py:5:1:"], flake8


ONE_TRIGGER = {  # ds.nn's module __getattr__, as transformers-style and stand-in packages have
    "policy.toml": """
        [heavy]
        "ds" = "deepspeed: slow to import"
        [light."app.light"]
        reason = "must start fast"
    """,
    "app/__init__.py": "",
    "ds/__init__.py": "",
    "ds/nn/__init__.py": """\
        import json


        def __getattr__(name):
            return json.dumps(name)
    """,
    "app/light.py": """\
        import ds.nn
        from ds.nn import Linear
    """,
}


def test_a_forbidden_modules_getattr_is_that_module(run: Run, tmp_path: Path) -> None:
    """``from ds.nn import Linear`` runs ds.nn's PEP 562 ``__getattr__``: code of ds.nn, which line 1
    already ran, so line 2 is the same cause, not a finding "imports ds.nn:__getattr__('Linear')"
    (on peft, ``from torch.nn import BCEWithLogitsLoss`` was one, and a baseline entry of that
    name). The interpreter as the oracle: line 2 runs ds.nn's ``__getattr__`` and no new module."""
    root = write(tmp_path, ONE_TRIGGER)
    code, out, _ = run(root, "check", "--no-cache")
    assert code == 1 and ":__getattr__" not in out
    assert out.endswith("\nFound 1 violation in 1 light module.\n")
    assert [(v["line"], v["heavy"], v["covers"]) for v in report(run, root, "--no-cache")["violations"]] \
        == [(1, "ds", [2])]
    done = subprocess.run(
        [sys.executable, "-c", "import sys, ds.nn; before = set(sys.modules); import ds.nn as nn; "
         "nn.__getattr__ = lambda name, g=nn.__getattr__: print('getattr', name) or g(name); "
         "from ds.nn import Linear; print(sorted(set(sys.modules) - before))"],
        cwd=root, capture_output=True, text=True, timeout=HANG_CATCHER)
    lines = done.stdout.splitlines()  # hasattr, then the from-import's getattr: ds.nn's code
    assert set(lines[:-1]) == {"getattr Linear"} and lines[-1] == "[]", done.stderr
    write(root, {"app/light.py": "from ds.nn import Linear\n"})
    (violation,) = report(run, root, "--no-cache")["violations"]
    assert (violation["heavy"], violation["also"]) == ("ds", [])


def _tool_with_site(root: Path, site: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``tool("flake8_importpolicy", "check", ...)``: ``python -m`` in ``root`` with ``site`` (an
    installed package's directory) on PYTHONPATH."""
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("PYTHONSAFEPATH", None)

    def tool(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", *args], cwd=root, env=env,
                              capture_output=True, text=True, timeout=HANG_CATCHER, check=False)
    return tool


def test_unresolved_sites_of_an_installed_package_are_one_entry(tmp_path: Path) -> None:
    """The IPL006 sites of one light module in one installed package are one entry of the text
    report and one flake8 finding, at the light module's statement that leads there, with their
    count and constructs; a first-party site stays on its own, at the site. JSON keeps every site.
    (Issue 25 item 7: a light module reaching torch listed 271 sites one by one.)"""
    root = write(tmp_path / "proj", INSTALLED_SITES)
    site = write(tmp_path / "site", INSTALLED_TP)
    tool = _tool_with_site(root, site)

    text = tool("flake8_importpolicy", "check", "--no-cache")
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines() == [
        "app/dyn.py:3:1: IPL006 light module app.light runs import-time code that cannot be "
        "resolved: dynamic-import importlib.import_module(__name__ + str(X))",
        "    app/light.py:3: app.light -> app.dyn (from-import)",
        "",
        "app/light.py:2:1: IPL006 light module app.light runs import-time code that cannot be "
        "resolved in installed package tp: 4 sites (call-through-variable 3, dynamic-import 1); "
        "--format json lists them",
        "",
        "No violations in 1 light module; 5 import-time sites not resolved (IPL006) in 2 entries.",
    ]
    data = json.loads(tool("flake8_importpolicy", "check", "--no-cache", "--format", "json").stdout)
    tp_init, tp_core = str(site / "tp" / "__init__.py"), str(site / "tp" / "core.py")
    assert [(u["path"], u["line"], u["construct"]) for u in data["unresolved"]] == [
        ("app/dyn.py", 3, "dynamic-import"),
        (tp_init, 5, "call-through-variable"),
        (tp_init, 13, "call-through-variable"),
        (tp_init, 14, "call-through-variable"),
        (tp_core, 2, "dynamic-import"),
    ]
    flake8 = tool("flake8", "--select", "IPL006", "app/light.py")
    assert flake8.stdout.splitlines() == [
        "app/light.py:2:1: IPL006 light module app.light runs import-time code that cannot be "
        "resolved in installed package tp: 4 sites (call-through-variable 3, dynamic-import 1); "
        "--format json lists them",
        "app/light.py:3:1: IPL006 light module app.light runs import-time code that cannot be "
        "resolved: dynamic-import importlib.import_module(__name__ + str(X)) at app/dyn.py:3: "
        "app.light -> app.dyn (app/light.py:3)",
    ], flake8


def test_unresolved_sites_of_many_installed_packages_are_one_line_each(tmp_path: Path) -> None:
    """Each installed package holding IPL006 sites is one line of the text report (its count and
    constructs, at the light module's statement that leads there; no chain), and at most
    GROUPS_SHOWN lines are, the last counting the rest: a vLLM light module with torch installed
    printed 89 lines for ten packages (issue 25: under 40). flake8 keeps one finding per package;
    JSON every site."""
    from flake8_importpolicy.output.text import GROUPS_SHOWN

    count = GROUPS_SHOWN + 2
    names = [f"tp{number:02d}" for number in range(count)]
    root = write(tmp_path / "proj", {
        **INSTALLED_SITES,
        "app/light.py": "".join(f"import {name}\n" for name in names),
    })
    site = write(tmp_path / "site", {
        f"{name}/__init__.py": "import importlib\nimportlib.import_module(str(1))\nexec(str(2))\n"
        for name in names
    })
    tool = _tool_with_site(root, site)

    text = tool("flake8_importpolicy", "check", "--no-cache")
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines == [
        *(f"app/light.py:{line}:1: IPL006 light module app.light runs import-time code that cannot be "
          f"resolved in installed package {name}: 2 sites (dynamic-import 1, exec 1); --format json "
          "lists them" for line, name in enumerate(names[:GROUPS_SHOWN - 1], start=1)),
        "... 3 more installed packages with sites not resolved (--format json lists them all)",
        "",
        f"No violations in 1 light module; {2 * count} import-time sites not resolved (IPL006) in "
        f"{count} entries.",
    ]
    data = json.loads(tool("flake8_importpolicy", "check", "--no-cache", "--format", "json").stdout)
    assert len(data["unresolved"]) == 2 * count
    flake8 = tool("flake8", "--select", "IPL006", "app/light.py")
    assert len(flake8.stdout.splitlines()) == count, flake8
    assert all(" in installed package tp" in line for line in flake8.stdout.splitlines()), flake8


TWO_LIGHTS_ONE_PACKAGE = {
    "policy.toml": """
        [settings]
        external = "follow"
        [heavy]
        "app.heavy" = "slow to import"
        [light."app.a"]
        reason = "must start fast"
        [light."app.b"]
        reason = "must start fast"
    """,
    "app/__init__.py": "",
    "app/heavy.py": "",
    "app/a.py": "import tp\nimport lone\n",
    "app/b.py": "from app.dyn import X\nimport lone\nimport tp\n",
    "app/dyn.py": "import importlib\nX = 1\nimportlib.import_module(__name__ + str(X))\n",
}
"""Two light modules reaching the installed packages ``tp`` (four sites, :data:`INSTALLED_TP`) and
``lone`` (one site), and one first-party site (``app.dyn``, from ``app.b`` only)."""


def test_unresolved_sites_of_an_installed_package_are_one_entry_for_the_run(tmp_path: Path) -> None:
    """In ``check`` text, the IPL006 sites in one installed package are one line for the whole
    run, after the first-party sites: how many light modules reach it (named), each site counted
    once by kind; a package's lone site reached from two light modules is one line too. The
    summary counts the sites and the entries. JSON keeps every site of every light module, flake8
    its entries per light module. (On peft with its real dependencies: 521 lines, the same ten
    sites in tqdm, yaml, safetensors ... once per light module.)"""
    root = write(tmp_path / "proj", TWO_LIGHTS_ONE_PACKAGE)
    site = write(tmp_path / "site", {
        **INSTALLED_TP, "lone/__init__.py": "import importlib\nimportlib.import_module(str(2))\n",
    })
    tool = _tool_with_site(root, site)

    text = tool("flake8_importpolicy", "check", "--no-cache")
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines() == [
        "app/dyn.py:3:1: IPL006 light module app.b runs import-time code that cannot be "
        "resolved: dynamic-import importlib.import_module(__name__ + str(X))",
        "    app/b.py:1: app.b -> app.dyn (from-import)",
        "",
        "app/a.py:1:1: IPL006 2 light modules (app.a, app.b) run import-time code that cannot be "
        "resolved in installed package tp: 4 sites (call-through-variable 3, dynamic-import 1); "
        "--format json lists them",
        "app/a.py:2:1: IPL006 2 light modules (app.a, app.b) run import-time code that cannot be "
        "resolved in installed package lone: 1 site (dynamic-import 1); --format json lists it",
        "",
        "No violations in 2 light modules; 11 import-time sites not resolved (IPL006) in 3 entries.",
    ]
    data = json.loads(tool("flake8_importpolicy", "check", "--no-cache", "--format", "json").stdout)
    assert [(u["light"], u["construct"]) for u in data["unresolved"]].count(
        ("app.a", "call-through-variable")) == 3
    assert len(data["unresolved"]) == 11
    flake8 = tool("flake8", "--select", "IPL006", "app/a.py", "app/b.py")
    assert [line.partition(": IPL006 ")[0] for line in flake8.stdout.splitlines()] == [
        "app/a.py:1:1", "app/a.py:2:1", "app/b.py:1:1", "app/b.py:2:1", "app/b.py:3:1",
    ], flake8


def test_first_party_sites_come_first_and_installed_ones_are_one_line_each(tmp_path: Path) -> None:
    """The first-party IPL006 sites are shown first, one by one, within the light module's budget;
    then each installed package one line, a single-site one too, whatever their paths sort as:
    here the packages lie in ``.venv/site`` inside the project, on ``PYTHONPATH`` (so they are
    installed code, not first-party, though under the source root), and sort before ``app/``.
    flake8 reports the same entries; JSON every site. (Issue 25 item 7: vLLM's v1.engine.core
    showed none of its 49 first-party sites, behind six one-site packages printed in full.)"""
    from flake8_importpolicy.output.text import GROUPS_SHOWN

    names = [f"tp{number:02d}" for number in range(1, 16)]
    root = write(tmp_path / "proj", {
        **INSTALLED_SITES,
        "app/light.py": "".join(f"import {name}\n" for name in names) + "from app.dyn import X\n",
    })
    site = write(root / ".venv" / "site", {
        f"{name}/__init__.py": f"import importlib\nimportlib.import_module(str('{name}'))\n"
        for name in names
    })
    tool = _tool_with_site(root, site)

    text = tool("flake8_importpolicy", "check", "--no-cache")
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines() == [
        "app/dyn.py:3:1: IPL006 light module app.light runs import-time code that cannot be "
        "resolved: dynamic-import importlib.import_module(__name__ + str(X))",
        "    app/light.py:16: app.light -> app.dyn (from-import)",
        "",
        *(f"app/light.py:{line}:1: IPL006 light module app.light runs import-time code that cannot "
          f"be resolved in installed package {name}: 1 site (dynamic-import 1); --format json "
          "lists it" for line, name in enumerate(names[:GROUPS_SHOWN - 1], start=1)),
        f"... {len(names) - GROUPS_SHOWN + 1} more installed packages with sites not resolved "
        "(--format json lists them all)",
        "",
        "No violations in 1 light module; 16 import-time sites not resolved (IPL006).",
    ]
    data = json.loads(tool("flake8_importpolicy", "check", "--no-cache", "--format", "json").stdout)
    assert sorted(u["path"] for u in data["unresolved"]) == [
        *(f".venv/site/{name}/__init__.py" for name in names), "app/dyn.py"]
    flake8 = tool("flake8", "--select", "IPL006", "app/light.py")
    lines = flake8.stdout.splitlines()
    assert len(lines) == 16 and lines[0] == (
        "app/light.py:1:1: IPL006 light module app.light runs import-time code that cannot be "
        "resolved in installed package tp01: 1 site (dynamic-import 1); --format json lists it"
    ) and lines[15] == (
        "app/light.py:16:1: IPL006 light module app.light runs import-time code that cannot be "
        "resolved: dynamic-import importlib.import_module(__name__ + str(X)) at app/dyn.py:3: "
        "app.light -> app.dyn (app/light.py:16)"
    ), flake8


def test_one_light_module_report_stays_under_40_lines(tmp_path: Path) -> None:
    """However many first-party sites and installed packages a light module reaches, its text
    report is at most LINES_PER_LIGHT_MODULE lines of first-party blocks (blank lines included),
    GROUPS_SHOWN lines of packages, a blank line and the summary: under 40 (issue 25, "Done when":
    a vLLM 0.33.0 light module with torch installed printed 40)."""
    from flake8_importpolicy.output.text import GROUPS_SHOWN, LINES_PER_LIGHT_MODULE

    mods = [f"d{number:02d}" for number in range(30)]
    names = [f"tp{number:02d}" for number in range(15)]
    root = write(tmp_path / "proj", {
        **INSTALLED_SITES,
        "app/light.py": "".join(f"import app.{mod}\n" for mod in mods)
        + "".join(f"import {name}\n" for name in names),
        **{f"app/{mod}.py": "import importlib\nimportlib.import_module(str(1))\n" for mod in mods},
    })
    site = write(tmp_path / "site", {
        f"{name}/__init__.py": "import importlib\nimportlib.import_module(str(1))\n"
        for name in names
    })
    lines = _tool_with_site(root, site)("flake8_importpolicy", "check", "--no-cache").stdout.splitlines()
    assert len(lines) == LINES_PER_LIGHT_MODULE + GROUPS_SHOWN + 2 < 40, lines
    shown = [line for line in lines if line.startswith("app/d")]
    assert len(shown) == 8 and lines[0].startswith("app/d00.py:2:1: IPL006 ")
    assert lines[LINES_PER_LIGHT_MODULE - 2] == (
        "    ... 22 more findings of light module app.light (--format json lists them all)")
    assert lines[LINES_PER_LIGHT_MODULE].startswith("app/light.py:31:1: IPL006 ")


def test_installed_sites_are_grouped_per_distribution(tmp_path: Path) -> None:
    """The IPL006 sites of installed code are grouped per distribution, as
    ``importlib.metadata.packages_distributions`` maps top-level packages to them (torch and
    torchgen were two entries; both are distribution torch), most sites first; a package that no
    metadata names is its own entry. The text report and flake8 agree; JSON keeps every site."""
    root = write(tmp_path / "proj", {**INSTALLED_SITES, "app/light.py": DISTRIBUTIONS_LIGHT})
    site = write(tmp_path / "site", DISTRIBUTIONS)
    tool = _tool_with_site(root, site)
    entries = [
        "app/light.py:1:1: IPL006 light module app.light runs import-time code that cannot be "
        "resolved in installed package dist: 2 sites (dynamic-import 1, exec 1); --format json "
        "lists them",
        "app/light.py:3:1: IPL006 light module app.light runs import-time code that cannot be "
        "resolved in installed package rec: 2 sites (exec 2); --format json lists them",
        "app/light.py:5:1: IPL006 light module app.light runs import-time code that cannot be "
        "resolved in installed package loose: 1 site (exec 1); --format json lists it",
    ]

    text = tool("flake8_importpolicy", "check", "--no-cache")
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines() == [
        *entries, "",
        "No violations in 1 light module; 5 import-time sites not resolved (IPL006) in 3 entries.",
    ]
    data = json.loads(tool("flake8_importpolicy", "check", "--no-cache", "--format", "json").stdout)
    assert len(data["unresolved"]) == 5
    flake8 = tool("flake8", "--select", "IPL006", "app/light.py")
    assert flake8.stdout.splitlines() == sorted(entries), flake8


def test_stale_forbid_and_allow_entries(run: Run, tmp_path: Path) -> None:
    """IPL007 at the entry's line, with a "did you mean" when a known module name is close; an entry
    whose top-level package is not installed here is a note, which does not change the exit status."""
    root = write(tmp_path, {**BASIC, "policy.toml": """
        [heavy]
        "app.heavy" = "slow to import"
        [light."app.light"]
        reason = "must start fast"
        forbid = ["app.heavy", "app.heavvy", "jsonn", "gpu_only_on_the_cluster.cuda"]
        allow = ["app.mid", "app.mdi.**"]
    """})
    code, out, _ = run(root, "check", "--no-cache")
    assert code == 1
    assert out.splitlines()[4:] == [
        "policy.toml:5: IPL007 light.\"app.light\".forbid[1] entry 'app.heavvy' names no [heavy] or "
        "[heavy-calls] key and no module; did you mean 'app.heavy'?",
        "policy.toml:5: IPL007 light.\"app.light\".forbid[2] entry 'jsonn' names no [heavy] or "
        "[heavy-calls] key and no module; did you mean 'json'?",
        "policy.toml:6: IPL007 light.\"app.light\".allow[1] entry 'app.mdi.**' names no [heavy] or "
        "[heavy-calls] key and no module; did you mean 'app.mid.**'?",
        "policy.toml:5: note: IPL007 light.\"app.light\".forbid[3] entry 'gpu_only_on_the_cluster.cuda' "
        "names no [heavy] or [heavy-calls] key and no module; package 'gpu_only_on_the_cluster' is not "
        "installed for this interpreter",
        "",
        "Found 1 violation in 1 light module, 3 problems.",
    ]
    data = json.loads(run(root, "check", "--no-cache", "--format", "json")[1])
    assert [n["line"] for n in data["notes"]] == [5]
    # only the note left: clean
    write(root, {"policy.toml": """
        [heavy]
        "app.heavy" = "slow to import"
        [light."app.light"]
        reason = "must start fast"
        forbid = ["gpu_only_on_the_cluster"]
    """})
    code, out, _ = run(root, "check", "--no-cache")
    assert code == 0, out
    assert out.endswith("\nOK: 1 light module checked, no forbidden import-time imports.\n")


def test_heavy_keys_of_packages_not_installed_are_notes(run: Run, tmp_path: Path) -> None:
    """A [heavy] or [heavy-calls] key whose top-level package this interpreter does not have (GPU
    packages on a CI machine, a pipx venv) is a note, which does not change the exit status; one
    close to an installed name is a finding; a base's keys are reported in the base; a preset's
    keys are not checked (heavy-ml names dozens of packages no venv holds all of). The typos
    themselves: tests/fixtures/p_heavy_typo."""
    root = write(tmp_path, {**BASIC, "policy.toml": """
        extends = ["heavy-ml", "base.toml"]
        [heavy]
        "app.heavy" = "slow to import"
        "gpu_only_on_the_cluster.cuda" = "initialises the accelerator"
        [heavy-calls]
        "gpu_only_on_the_cluster.cuda.init" = "initialises the accelerator"
        [light."app.light"]
        reason = "must start fast"
    """, "base.toml": """
        [heavy]
        zz_not_installed_pkg = "a bare key"
        "app.midd" = "a typo in a base"
    """})
    code, out, _ = run(root, "check", "--no-cache")
    assert code == 1, out
    assert out.splitlines()[4:] == [
        "base.toml:3: IPL007 [heavy] entry 'app.midd' names no module; did you mean 'app.mid'?",
        "base.toml:2: note: IPL007 [heavy] entry 'zz_not_installed_pkg' names no module; package "
        "'zz_not_installed_pkg' is not installed for this interpreter",
        "policy.toml:4: note: IPL007 [heavy] entry 'gpu_only_on_the_cluster.cuda' names no module; "
        "package 'gpu_only_on_the_cluster' is not installed for this interpreter",
        "policy.toml:6: note: IPL007 [heavy-calls] entry 'gpu_only_on_the_cluster.cuda.init' names no "
        "module or function; package 'gpu_only_on_the_cluster' is not installed for this interpreter",
        "",
        "Found 1 violation in 1 light module, 1 problem.",
    ]
    write(root, {"base.toml": "[heavy]\nzz_not_installed_pkg = \"a bare key\"\n"})
    code, out, _ = run(root, "check", "--no-cache", "--unresolved", "error")
    assert code == 1 and "problem" not in out.splitlines()[-1], out  # the violation alone
    assert out.count("note: IPL007") == 3


def test_noqa_for_another_code_does_not_suppress(run: Run, tmp_path: Path) -> None:
    # Regression: noqa._NOQA once had `[A-Z][0-9]+` (flake8 has `[A-Z]+[0-9]+`), so "IPL002" did not
    # match the codes group and `# noqa: IPL002` acted as a bare `# noqa`.
    root = write(tmp_path, {**SEVERAL_HEAVY, "app/light.py": "import app.heavy.a  # noqa: IPL002\n"
                                                             "import app.heavy.b  # noqa:IPL002,E501\n"})
    assert [v["line"] for v in report(run, root, "--no-cache")["violations"]] == [1, 2]


@pytest.mark.parametrize(
    ("source", "lines"),
    [
        ("X = 1\n\x0c\nimport app.heavy  # noqa: IPL001\n", []),
        ("s = '\u2028'  # noqa\nimport app.heavy\n", [2]),
        ("X = 1\r\nimport app.heavy  # noqa: IPL001\r\n", []),
        ("X = 1\rimport app.heavy  # noqa: IPL001\r", []),
        ("import app.heavy\r# noqa\r", [1]),
        ("# noqa\r\nimport app.heavy\n", [2]),
    ],
    ids=["form-feed", "line-separator", "crlf", "cr", "cr-next-line", "crlf-and-lf"],
)
def test_noqa_line_numbers_follow_python_line_breaks(
    run: Run, tmp_path: Path, source: str, lines: list[int]
) -> None:
    root = write(tmp_path, {**BASIC})
    (root / "app" / "light.py").write_text(source, encoding="utf-8")
    assert [v["line"] for v in report(run, root, "--no-cache")["violations"]] == lines


def test_ignore_used_and_unused(run: Run, tmp_path: Path) -> None:
    policy = POLICY + textwrap.dedent("""
        [[ignore]]
        import = "app.light -> app.mid"
        reason = "accepted"
        [[ignore]]
        import = "app.nobody -> app.mid"
        reason = "stale"
    """)
    root = write(tmp_path, {**BASIC, "policy.toml": policy})
    data = report(run, root, "--no-cache")
    assert data["violations"] == []
    assert data["problems"] == [{
        "code": "IPL004",
        "message": "[[ignore]] entry 'app.nobody -> app.mid' matches no import in any light "
                   "module's import-time closure",
        "path": "policy.toml", "line": 10,  # the entry's `import = ...` line
    }]


def test_ignore_names_function_nodes_and_heavy_calls(run: Run, tmp_path: Path) -> None:
    """[[ignore]] sides may be function bodies run at import time (module:qualname) and
    [heavy-calls] calls (name()); an entry that removes nothing is IPL004 as usual."""
    files = {
        "policy.toml": """
            [heavy]
            "app.heavy" = "slow to import"
            [heavy-calls]
            "app.gpu.init" = "initialises the GPU"
            [light."app.light"]
            reason = "must start fast"
            [[ignore]]
            import = "app.helpers:setup -> app.heavy"
            reason = "setup is only slow on Windows"
            [[ignore]]
            import = "app.light -> app.gpu.init()"
            reason = "the GPU is initialised before any fork"
            [[ignore]]
            import = "app.helpers:Loader.load -> app.heavy"
            reason = "no longer called"
        """,
        "app/__init__.py": "",
        "app/heavy.py": "",
        "app/gpu.py": "def init():\n    pass\n",
        "app/helpers.py": "def setup():\n    import app.heavy\n\n\nclass Loader:\n    def load(self):\n"
                          "        import app.heavy\n",
        "app/light.py": "from app import gpu, helpers\n\nhelpers.setup()\ngpu.init()\n",
    }
    root = write(tmp_path, files)
    data = report(run, root, "--no-cache")
    assert data["violations"] == []
    assert [(p["code"], p["line"]) for p in data["problems"]] == [("IPL004", 14)]
    assert "'app.helpers:Loader.load -> app.heavy'" in str(data["problems"][0]["message"])
    # without the entries: both findings come back
    write(root, {"policy.toml": files["policy.toml"].split("[[ignore]]")[0]})
    assert [v["heavy"] for v in report(run, root, "--no-cache")["violations"]] == [
        "app.heavy", "app.gpu.init()"]
    write(root, {"policy.toml": files["policy.toml"].replace("app.helpers:setup", "app.helpers:set-up")})
    code, _, err = run(root, "check", "--no-cache")
    assert code == 2
    assert ('ignore[0].import: left of "->": invalid module pattern "app.helpers:set-up": "set-up" is '
            'not a Python identifier (after ":", a function\'s qualified name in its module, e.g. '
            '"mypkg.env:setup")') in err


def test_ignore_of_the_light_modules_parent_package_hop(run: Run, tmp_path: Path) -> None:
    policy = """
        [heavy]
        "app.heavy" = "slow"
        [light."app.ops.light"]
        reason = "r"
        [[ignore]]
        import = "app.ops.light -> app.ops"
        reason = "accepted"
    """
    root = write(tmp_path, {**BASIC, "policy.toml": policy, "app/ops/__init__.py": "import app.heavy\n",
                            "app/ops/light.py": "X = 1\n"})
    assert report(run, root, "--no-cache") == {"violations": [], "problems": [], "unresolved": []}


def test_parent_package_violation(run: Run, tmp_path: Path) -> None:
    root = write(tmp_path, {**BASIC, "policy.toml": POLICY.replace("app.light", "app.ops.light"),
                            "app/ops/__init__.py": "from app.ops.fused import f\n",
                            "app/ops/fused.py": "import app.heavy\ndef f():\n    pass\n",
                            "app/ops/light.py": "X = 1\n"})
    [violation] = report(run, root, "--no-cache")["violations"]
    assert (violation["path"], violation["line"], violation["col"]) == ("app/ops/light.py", 1, 0)
    assert [(h["kind"], h["imported"]) for h in violation["chain"]] == [
        ("parent-package", "app.ops"), ("from-import", "app.ops.fused"), ("import", "app.heavy"),
    ]


def test_allow_continues_through_and_forbid_narrows(run: Run, tmp_path: Path) -> None:
    policy = """
        [heavy]
        "app.heavy" = "slow"
        "app.deeper" = "slower"
        [light."app.l_allow"]
        reason = "r"
        allow = ["app.heavy"]
        [light."app.l_forbid"]
        reason = "r"
        forbid = ["app.deeper", "app.extra"]
    """
    root = write(tmp_path, {
        "policy.toml": policy, "app/__init__.py": "", "app/deeper.py": "", "app/extra.py": "",
        "app/heavy.py": "import app.deeper\n",
        "app/l_allow.py": "import app.heavy\n",
        "app/l_forbid.py": "import app.heavy\nimport app.extra\n",
    })
    found = {(v["light"], v["line"]): (v["heavy"], v["reason"])
             for v in report(run, root, "--no-cache")["violations"]}
    assert found == {
        ("app.l_allow", 1): ("app.deeper", "slower"),
        ("app.l_forbid", 1): ("app.deeper", "slower"),
        ("app.l_forbid", 2): ("app.extra", "r"),
    }


def test_wildcard_heavy_and_light_patterns_and_also(run: Run, tmp_path: Path) -> None:
    policy = """
        [heavy]
        "app.*.impl" = "one segment"
        "vendor.**" = "anything under vendor"
        [light."app.*.ops"]
        reason = "r"
        [light."app.nomatch.*.ops"]
        reason = "r"
    """
    root = write(tmp_path, {
        "policy.toml": policy, "app/__init__.py": "", "vendor/__init__.py": "",
        "vendor/x/__init__.py": "", "vendor/x/y.py": "",
        "app/a/__init__.py": "", "app/a/ops.py": "import app.a.impl\nimport vendor.x.y\n",
        "app/a/impl/__init__.py": "import app.a.impl.sub\n", "app/a/impl/sub.py": "",
        "app/b/__init__.py": "", "app/b/ops/__init__.py": "from app.a import ops\n",
    })
    data = report(run, root, "--no-cache")
    found = sorted((v["light"], v["line"], v["heavy"], v["pattern"], tuple(v["also"]))
                   for v in data["violations"])
    assert found == [
        ("app.a.ops", 1, "app.a.impl", "app.*.impl", ()),
        ("app.a.ops", 2, "vendor.x", "vendor.**", ()),
        ("app.b.ops", 1, "app.a.impl", "app.*.impl", ("vendor.x",)),
    ]
    assert [p["code"] for p in data["problems"]] == ["IPL003"]
    assert "app.nomatch.*.ops" in str(data["problems"][0]["message"])


def test_two_light_rules_for_one_module_report_every_forbidden_module(
    run: Run, tmp_path: Path
) -> None:
    policy = """
        [heavy]
        "app.h1" = "one"
        "app.h2" = "two"
        [light."app.light"]
        reason = "r"
        forbid = ["app.h2"]
        [light."app.*"]
        reason = "r2"
        forbid = ["app.h1"]
    """
    root = write(tmp_path, {
        "policy.toml": policy, "app/__init__.py": "", "app/h1.py": "", "app/h2.py": "",
        "app/mid.py": "import app.h1\nimport app.h2\n", "app/light.py": "import app.mid\n",
    })
    reached = set()
    for violation in report(run, root, "--no-cache")["violations"]:
        if violation["light"] == "app.light" and violation["line"] == 1:
            reached |= {violation["heavy"], *violation["also"]}
    assert reached == {"app.h1", "app.h2"}


def test_namespace_light_module_violation_names_its_directory(run: Run, tmp_path: Path) -> None:
    root = write(tmp_path, {
        "policy.toml": '[heavy]\n"app.heavy" = "slow"\n[light."app.ns"]\nreason = "r"\n',
        "app/__init__.py": "import app.heavy\n", "app/heavy.py": "", "app/ns/data.txt": "",
    })
    [violation] = report(run, root, "--no-cache")["violations"]
    assert violation["light"] == "app.ns"
    assert violation["path"] == "app/ns"


def test_unanalysable_modules_deep_in_a_closure(run: Run, tmp_path: Path) -> None:
    root = write(tmp_path, {
        **BASIC,
        "app/light.py": "import app.a\nimport app.nul\nimport app.badutf\nimport app.linked\n",
        "app/a.py": "import app.b\n",
        "app/b.py": "x = 1\ndef f(:\n    pass\nimport app.heavy\n",
        "app/nul.py": b"x = 1\n\x00\n",
        "app/badutf.py": b"x = 1\ny = '\xff'\n",
    })
    (root / "app" / "linked.py").symlink_to(tmp_path / "missing-target.py")
    code, out, _ = run(root, "check", "--no-cache")
    assert code == 1
    data = report(run, root, "--no-cache")
    problems = {(p["code"], p["path"], p["line"]) for p in data["problems"]}
    assert problems == {
        ("IPL005", "app/b.py", 2),
        ("IPL005", "app/nul.py", 2),
        ("IPL005", "app/badutf.py", 2),
        ("IPL005", "app/linked.py", 1),
    }
    assert all("app.b" in p["message"] or "null" in p["message"] or "utf-8" in p["message"]
               or "cannot read" in p["message"] for p in data["problems"])
    assert "app/b.py:2: IPL005 cannot analyse app.b (line 2: invalid syntax)" in out


def test_unresolvable_heavy_module_is_a_violation(run: Run, tmp_path: Path) -> None:
    policy = """
        [heavy]
        "flashinfer_not_installed" = "GPU only"
        [light."app.light"]
        reason = "r"
    """
    root = write(tmp_path, {
        **BASIC, "policy.toml": policy,
        "app/light.py": (
            "import os\nif os.environ.get(os.sep[:0] + 'GPU'):\n    import flashinfer_not_installed.ops\n"
        ),
    })
    [violation] = report(run, root, "--no-cache")["violations"]
    assert violation["heavy"] == "flashinfer_not_installed"
    assert violation["chain"][0]["flags"] == ["conditional"]


def test_stdlib_light_module(run: Run, tmp_path: Path) -> None:
    root = write(tmp_path, {"policy.toml": """
        [heavy]
        "json.scanner" = "pretend it is heavy"
        [light."json"]
        reason = "r"
    """})
    [violation] = report(run, root, "--no-cache")["violations"]
    assert violation["light"] == "json" and violation["heavy"] == "json.scanner"
    assert os.path.isabs(str(violation["path"]))  # outside the policy directory: absolute
    assert [h["imported"] for h in violation["chain"]] == ["json.decoder", "json.scanner"]


# -- third-party code: settings.external, found through the interpreter's sys.path ---------------


def _check_with_pythonpath(root: Path, site: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("PYTHONSAFEPATH", None)
    return subprocess.run(
        [sys.executable, "-m", "flake8_importpolicy", "check", "--no-cache", "--format", "json",
         *extra],
        cwd=root, env=env, capture_output=True, text=True, timeout=HANG_CATCHER, check=False,
    )


@pytest.mark.parametrize(
    ("external", "heavy", "expected"),
    [
        ("auto", "tp_heavy", ["tp_heavy"]),
        ("stop", "tp_heavy", []),
        ("follow", "tp_heavy", ["tp_heavy"]),
        ("auto", "app.heavy", []),  # no forbidden pattern names a third-party module
        ("follow", "app.heavy", ["app.heavy"]),
        ("stop", "tp_light", ["tp_light"]),  # a third-party leaf matched by name
    ],
)
def test_external_modes_with_third_party_packages(
    tmp_path: Path, external: str, heavy: str, expected: list[str]
) -> None:
    site = write(tmp_path / "site", {
        "tp_light/__init__.py": "from tp_light import core\n",
        "tp_light/core.py": "import tp_heavy\nimport app.heavy\n",
        "tp_heavy/__init__.py": "",
    })
    root = write(tmp_path / "proj", {
        "policy.toml": f'[settings]\nexternal = "{external}"\n[heavy]\n"{heavy}" = "x"\n'
                       '[light."app"]\nreason = "r"\n',
        "app/__init__.py": "import tp_light\n", "app/heavy.py": "",
    })
    done = _check_with_pythonpath(root, site)
    assert done.returncode in (0, 1), done.stderr
    violations = json.loads(done.stdout)["violations"]
    assert [v["heavy"] for v in violations] == expected
    if expected and expected != ["tp_light"]:
        assert violations[0]["chain"][1]["path"] == str(site / "tp_light" / "__init__.py")


def _loaded_by_check(cwd: Path, options: list[str], modules: tuple[str, ...]) -> tuple[str, str]:
    """Run ``main(["check", *options])`` in a fresh interpreter in ``cwd``: ``(its stdout, "<exit
    status> <sorted list of the loaded modules whose names start with one of modules>")``."""
    probe = (
        "import sys\n"
        "from flake8_importpolicy.cli import main\n"
        f"code = main(['check', *{options!r}])\n"
        f"print(code, sorted(m for m in sys.modules if m.startswith({modules!r})), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=cwd, capture_output=True, text=True,
                          timeout=HANG_CATCHER)
    return done.stdout, done.stderr.splitlines()[-1]


@pytest.mark.parametrize("fmt", ["json", "text", "github", "sarif"])
def test_a_warm_check_imports_no_analysis_module(basic: Path, fmt: str) -> None:
    """An answer-cache hit prints the same report as the cold run without loading the policy, its
    model, its errors or the engine, in every format (the warm path is declared light in the
    repository's policy.toml too)."""
    command = [sys.executable, "-m", "flake8_importpolicy", "check", "--format", fmt]
    cold = subprocess.run(command, cwd=basic, capture_output=True, text=True, timeout=HANG_CATCHER)
    assert cold.returncode == 1, cold.stderr
    heavy = (
        "flake8_importpolicy.analysis", "flake8_importpolicy.config.load",
        "flake8_importpolicy.config.keys", "flake8_importpolicy.config.fields",
        "flake8_importpolicy.config.read", "flake8_importpolicy.config.validate",
        "flake8_importpolicy.config.merge", "flake8_importpolicy.config.reference",
        "flake8_importpolicy.answers.compute", "flake8_importpolicy.model.policy",
        "flake8_importpolicy.model.facts", "flake8_importpolicy.model.interpreter",
        "flake8_importpolicy.model.errors",
        *(() if fmt == "sarif" else ("flake8_importpolicy.codes_help",)),  # SARIF rules carry it
    )
    out, loaded = _loaded_by_check(basic, ["--format", fmt], heavy)
    assert loaded == "1 []"
    assert out == cold.stdout
    (basic / "app" / "mid.py").write_text("X = 1\n")  # an edit: the next answer is computed again
    _, loaded = _loaded_by_check(basic, ["--format", fmt], heavy)
    assert loaded.startswith("0 ['flake8_importpolicy.analysis")


def test_a_cold_check_loads_only_what_its_policy_uses(basic: Path) -> None:
    """A cold check of a policy without ``[assume]``, ``extends`` or ``[[ignore]]``, and with no
    problem to hint at, creates none of the value classes it does not need (each frozen dataclass
    costs its creation at every import: docs/performance.md) and does not import ``difflib``, the
    ``cache clear`` code, the scanner of the policy's key positions (which only places problems on
    their lines), the ``extends`` merge, the JSON Schema and docs generator of the declaration, or the
    codes' help text (SARIF only)."""
    unused = (
        "difflib", "flake8_importpolicy.model.assume", "flake8_importpolicy.model.bases",
        "flake8_importpolicy.answers.cache_clear", "flake8_importpolicy.model.why",
        "flake8_importpolicy.config.positions", "flake8_importpolicy.model.ignore",
        "flake8_importpolicy.config.merge", "flake8_importpolicy.config.reference",
        "flake8_importpolicy.codes_help",
    )
    _, loaded = _loaded_by_check(basic, ["--no-cache", "--format", "json"], unused)
    assert loaded == "1 []"


def test_an_edit_in_any_subpackage_file_makes_the_warm_answer_miss(
    basic: Path, tmp_path: Path
) -> None:
    """The code stamp of the warm indexes (command line, flake8, mypy) and the facts cache's engine
    fingerprint cover every file of the package, not a hand-kept list: editing a file of a
    subpackage makes the next answer a miss. A copy of the package stands in for the installed one,
    so the edit touches nothing the rest of the suite uses."""
    import shutil

    import flake8_importpolicy
    from flake8_importpolicy.answers import freshness

    copy = tmp_path / "package"
    shutil.copytree(os.path.dirname(flake8_importpolicy.__file__), copy,
                    ignore=shutil.ignore_patterns("__pycache__"))
    probe = (
        "import sys\n"
        "from flake8_importpolicy.answers import freshness\n"
        f"freshness._PACKAGE = {str(copy)!r}\n"
        "from flake8_importpolicy.cli import main\n"
        "code = main(['check', '--format', 'json'])\n"
        "print(code, 'flake8_importpolicy.analysis.engine' in sys.modules, file=sys.stderr)\n"
    )
    command = [sys.executable, "-c", probe]

    def stderr() -> str:
        return subprocess.run(command, cwd=basic, capture_output=True, text=True,
                              timeout=HANG_CATCHER).stderr

    assert stderr() == "1 True\n"
    assert stderr() == "1 False\n"
    names = [name for name, _ in freshness.find_package_files()]
    assert "analysis/graph.py" in names and "model/policy.py" in names and "cli.py" in names
    with open(copy / "analysis" / "graph.py", "a") as edited:
        edited.write("# edited\n")
    assert stderr() == "1 True\n"
    assert stderr() == "1 False\n"


# -- the README's command synopsis is the argument parser's ---------------------------------------


def _synopsis(parser: object, name: str) -> str:
    """``importpolicy NAME`` and every positional and option of ``parser``, as the README writes them:
    ``MODULE``, ``[MODULE ...]``, ``[--flag]``, ``[--option METAVAR]`` (``--option METAVAR`` when
    required), ``[--option a|b]``,
    ``[--repeatable METAVAR ...]``, aliases as ``--python|--interpreter``."""
    import argparse

    assert isinstance(parser, argparse.ArgumentParser)
    positionals, options = [], []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            continue  # every command has both; the README says so once
        if not action.option_strings:
            text = str(action.metavar or action.dest)
            positionals.append(f"[{text} ...]" if action.nargs == "*" else text)
            continue
        names = "|".join(o for o in action.option_strings if o.startswith("--"))
        if action.nargs == 0:
            options.append(f"[{names}]")
            continue
        value = "|".join(action.choices) if action.choices else str(action.metavar)
        more = " ..." if isinstance(action, argparse._AppendAction) else ""
        options.append(f"{names} {value}{more}" if action.required else f"[{names} {value}{more}]")
    return " ".join([f"importpolicy {name}", *positionals, *options])


def test_readme_synopsis_is_the_argument_parser() -> None:
    import argparse

    from flake8_importpolicy.cli import build_parser

    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    written = re.findall(r"^- `(importpolicy [^`]*)`", readme, re.MULTILINE)
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    expected = []
    for name, parser in commands.choices.items():
        inner = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if inner:
            expected.extend(_synopsis(sub, f"{name} {action}") for action, sub in inner[0].choices.items())
        else:
            expected.append(_synopsis(parser, name))
    assert written == expected


@pytest.mark.parametrize("layout", ["python-dir", "policy-outside-the-repository"])
def test_modules_outside_the_source_roots_give_one_problem_naming_the_root(
    tmp_path: Path, run: Run, layout: str
) -> None:
    """A ``python/`` layout with the default source roots, or a policy one directory above the
    repository with ``source-roots = ["."]``: one IPL003 naming the directory to set as source
    root, for every entry of the policy that names that package (issue 30 item 7)."""
    repo = tmp_path / "proj"
    for name, text in {"python/app/__init__.py": "", "python/app/light.py": "import json\n",
                       "python/app/heavy.py": ""}.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    policy = ('[heavy]\n"app.heavy" = "slow"\n"app.other" = "slow"\n\n'
              '[light."app.light"]\nreason = "fork"\nforbid = ["app.heavy"]\n')
    if layout == "python-dir":
        where, root = repo, "python"
    else:
        where, root = tmp_path, "proj/python"
        policy = '[settings]\nsource-roots = ["."]\n\n' + policy
    (where / "policy.toml").write_text(policy)
    code, out, err = run(where, "check")
    line = 7 if layout == "python-dir" else 10
    assert (code, err) == (1, ""), (out, err)
    assert out == (
        f"policy.toml:{line - 2}: IPL003 light pattern 'app.light' matches no module; package 'app' "
        f'is in {root}/, which is not a source root: set source-roots = ["{root}"] in [settings] '
        "(2 more entries of the policy name modules of 'app')\n"
        "\nFound 1 problem; no light module was checked.\n"
    )


def test_check_file_reports_only_the_light_modules_of_that_file(tmp_path: Path, run: Run) -> None:
    """``importpolicy check FILE`` (issue 30 item 8): the findings of the light module in FILE;
    a file that is not a light module's, or outside the source roots, is a usage error naming the
    light modules; with --write-baseline (which records the whole policy) too."""
    for name, text in {"app/__init__.py": "", "app/a.py": "import app.heavy\n",
                       "app/b.py": "import app.heavy\n", "app/clean.py": "import json\n",
                       "app/heavy.py": "", "app/mid.py": ""}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "policy.toml").write_text(
        '[settings]\nsource-roots = ["."]\n\n[heavy]\n"app.heavy" = "slow"\n\n'
        '[light."app.a"]\nreason = "r"\n[light."app.b"]\nreason = "r"\n[light."app.clean"]\nreason = "r"\n'
    )
    code, out, err = run(tmp_path, "check", "app/b.py")
    assert (code, err) == (1, "")
    assert out.startswith("app/b.py:1:1: IPL001 light module app.b imports app.heavy") and "app.a" not in out
    assert out.endswith("Found 1 violation in 1 light module.\n"), out
    assert run(tmp_path, "check", "app/clean.py")[:2] == (
        0, "OK: 1 light module checked, no forbidden import-time imports.\n")
    code, out, err = run(tmp_path, "check", "app/mid.py")
    assert (code, out) == (2, "")
    assert err == ("importpolicy: error: app/mid.py is app.mid, not a light module of the policy; name "
                   "the file of a light module (app.a, app.b, app.clean), or no FILE\n")
    assert run(tmp_path, "check", "app/nope.py") == (
        2, "", "importpolicy: error: app/nope.py: no such file; name the file of a light module "
        "(app.a, app.b, app.clean), or no FILE\n")
    code, _, err = run(tmp_path, "check", "--write-baseline", "b.json", "app/a.py")
    assert code == 2 and "name no FILE" in err


@pytest.mark.parametrize("spelling", [["--policy={}"], ["--pol", "{}"], ["--policy", "{}"]])
def test_staged_maps_every_spelling_of_policy_into_the_copy(
    tmp_path: Path, run: Run, spelling: list[str]
) -> None:
    """``check --staged`` checks what the git index holds: a policy named by its absolute path as
    ``--policy=X`` or abbreviated (``--pol X``) is the copy's too, not the work tree's, whose
    unstaged edit imports the heavy module."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    files = {"app/__init__.py": "", "app/light.py": "import json\n", "app/heavy.py": "",
             "conf/policy.toml": '[settings]\nsource-roots = [".."]\n\n[heavy]\n"app.heavy" = "slow"\n'
                                 '\n[light."app.light"]\nreason = "r"\n'}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    for command in (["init", "-q"], ["add", "-A"]):
        subprocess.run(["git", *command], cwd=tmp_path, env=env, check=True, timeout=HANG_CATCHER)
    (tmp_path / "app" / "light.py").write_text("import app.heavy\n")  # not staged
    assert run(tmp_path, "check", "--policy", "conf/policy.toml")[0] == 1
    policy = str(tmp_path / "conf" / "policy.toml")
    code, out, err = run(tmp_path, "check", "--staged", *(arg.format(policy) for arg in spelling))
    assert (code, err) == (0, ""), (out, err)
