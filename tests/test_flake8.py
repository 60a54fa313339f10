"""The flake8 plugin, end to end: the real ``flake8`` in subprocesses over copies of the trees in
``tests/fixtures_flake8`` (inline ``# IPL001: 0 shop.gpu`` comments are the expectations: code, column,
the message's distinguishing part; see ``helpers.read_expectations``), plus in-process tests
of :mod:`flake8_importpolicy.answers.per_file`, which answers per file.

flake8 runs cost about 0.3 s each, so each test runs its independent flake8 processes concurrently.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import HANG_CATCHER, Expectation, Reported, compare_expectations, read_expectations

from flake8_importpolicy import cli
from flake8_importpolicy.answers.per_file import PerFileChecker
from flake8_importpolicy.config.load import load_policy
from flake8_importpolicy.config.locate import find_cache_dir, find_policy
from flake8_importpolicy.flake8_checker import ImportPolicyChecker

FIXTURES = Path(__file__).parent / "fixtures_flake8"
OPS_INIT = "src/inferno/models/common/ops/__init__.py"
SEED_LINE = "from .fused_allreduce_rms_norm import fused_allreduce_rms_norm\n"
SEED_AFTER = "from .rms_norm import rms_norm\n"
CRITICAL = "There was a critical error during execution of Flake8:"
PROJECT_WITHOUT_CONFIG = read_expectations(FIXTURES / "project") | {
    Expectation("src/shop/lights/per_file_ignored.py", 1, "IPL001", 0, "shop.gpu")  # no per-file-ignores
}
_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>[A-Z]+\d+) (?P<text>.*)$")


@dataclass(frozen=True)
class Run:
    """One flake8 process: its arguments and what it printed."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def lines(self) -> list[str]:
        return self.stdout.splitlines()

    def reported(self, prefix: str = "IPL") -> list[Reported]:
        """Every reported code starting with ``prefix``, its column 0-based (flake8 shows it 1-based)."""
        found = []
        for line in self.lines:
            match = _LINE.match(line)
            if match and match["code"].startswith(prefix):
                found.append(Reported(match["path"], int(match["line"]), match["code"],
                                      int(match["col"]) - 1, match["text"]))
        return found

    def found(self, prefix: str = "IPL") -> set[tuple[str, int, int, str]]:
        """``(path, line, 0-based column, code)`` of every reported code starting with ``prefix``."""
        return {(r.path, r.line, r.col or 0, r.code) for r in self.reported(prefix)}

    def matches(self, expected: set[Expectation]) -> bool:
        """True when the IPL findings are exactly ``expected`` (positions and texts)."""
        reported, wanted = compare_expectations(self.reported(), expected)
        return reported == wanted


def _copy(name: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(FIXTURES / name, tmp_path / name))


def _flake8(
    args: Sequence[str], cwd: Path, *, stdin: str | None = None, start_method: str | None = None
) -> Run:
    if start_method is None:
        command = [sys.executable, "-m", "flake8", *args]
    else:
        program = (
            "import multiprocessing, sys\n"
            f"multiprocessing.set_start_method({start_method!r})\n"
            "from flake8.main.cli import main\n"
            "raise SystemExit(main(sys.argv[1:]))\n"
        )
        command = [sys.executable, "-c", program, *args]
    proc = subprocess.run(
        command, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=HANG_CATCHER
    )
    return Run(tuple(args), proc.returncode, proc.stdout, proc.stderr)


def _run_all(*jobs: tuple[Sequence[str], Path, dict[str, str | None]]) -> list[Run]:
    """Run independent flake8 processes concurrently; results in the order given."""
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        futures = [pool.submit(_flake8, args, cwd, **kwargs) for args, cwd, kwargs in jobs]
        return [future.result() for future in futures]


def _seed(tree: Path) -> str:
    """The light ops package with the seeded re-export line (line 6)."""
    text = (tree / OPS_INIT).read_text()
    assert text.count(SEED_AFTER) == 1
    return text.replace(SEED_AFTER, SEED_AFTER + SEED_LINE)


# -- whole trees -------------------------------------------------------------------------------------


def test_project_positions_texts_noqa_and_per_file_ignores(tmp_path: Path) -> None:
    tree = _copy("project", tmp_path)
    (tree / ".flake8").write_text(
        "[flake8]\nper-file-ignores =\n    src/shop/lights/per_file_ignored.py: IPL001\n"
    )
    run = _flake8(["src"], tree)  # IPL is selected by default
    assert run.returncode == 1, run
    reported, expected = compare_expectations(run.reported(), read_expectations(tree))
    assert reported == expected, run.stdout
    assert (
        "src/shop/api.py:3:1: IPL001 light module shop.api imports shop.gpu at import time "
        "(initialises CUDA): shop.api -> shop.engine (src/shop/api.py:3) -> shop.kernels "
        "(src/shop/engine.py:3) -> shop.gpu (src/shop/kernels.py:3)"
    ) in run.lines
    assert (
        "src/shop/engine.py:3:1: IPL002 this import makes light module shop.api, shop.cli import "
        "shop.gpu at import time (initialises CUDA): shop.api -> shop.engine (src/shop/api.py:3) "
        "-> shop.kernels (src/shop/engine.py:3) -> shop.gpu (src/shop/kernels.py:3)"
    ) in run.lines
    assert run.stderr == ""


SELECTIONS = {  # name: (arguments, [flake8] config lines, IPL codes reported)
    "select-F": (["--select", "F"], "", set()),
    "extend-select": (["--select", "E", "--extend-select", "IPL"], "", {"IPL001", "IPL002"}),
    "ignore-IPL002": (["--ignore", "IPL002"], "", {"IPL001"}),
    "extend-ignore": (["--extend-ignore", "IPL"], "", set()),
    "config-select": ([], "select = E,F,W\n", set()),
    "config-extend-select": ([], "select = E,F,W\nextend-select = IPL\n", {"IPL001", "IPL002"}),
}


def test_select_and_ignore(tmp_path: Path) -> None:
    jobs = []
    for name, (args, config, _) in SELECTIONS.items():
        tree = _copy("project", tmp_path / name)
        (tree / ".flake8").write_text(f"[flake8]\n{config}")
        jobs.append(([*args, "src/shop/api.py", "src/shop/engine.py"], tree, {}))
    for (name, (_, _, expected)), run in zip(SELECTIONS.items(), _run_all(*jobs)):
        assert {code for *_, code in run.found()} == expected, (name, run)
        assert run.stderr == "", (name, run)


def test_seed_edit_before_and_after(tmp_path: Path) -> None:
    tree = _copy("seed", tmp_path)
    before = _flake8(["--select", "IPL", "src"], tree)
    assert (before.returncode, before.stdout, before.stderr) == (0, "", "")

    (tree / OPS_INIT).write_text(_seed(tree))
    after = _flake8(["--select", "IPL", "src"], tree)
    chain = (
        "inferno.models.common.ops -> inferno.models.common.ops.fused_allreduce_rms_norm "
        "(src/inferno/models/common/ops/__init__.py:6) -> inferno.distributed.parallel_state "
        "(src/inferno/models/common/ops/fused_allreduce_rms_norm.py:1) -> inferno.config "
        "(src/inferno/distributed/parallel_state.py:3)"
    )
    reason = "initialises CUDA when imported; a forked engine worker then dies"
    ipl002 = (
        f"IPL002 this import makes light module inferno.models.common.ops import inferno.config "
        f"at import time ({reason}): {chain}"
    )
    assert after.lines == [
        f"src/inferno/distributed/parallel_state.py:3:1: {ipl002}",
        f"{OPS_INIT}:6:1: IPL001 light module inferno.models.common.ops imports inferno.config at "
        f"import time ({reason}): {chain}",
        f"src/inferno/models/common/ops/fused_allreduce_rms_norm.py:1:1: {ipl002}",
    ]
    assert after.returncode == 1


# -- editors: the buffer on stdin ---------------------------------------------------------------------


def test_stdin_buffer_is_the_checked_file(tmp_path: Path) -> None:
    tree = _copy("seed", tmp_path)
    seeded = _seed(tree)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "policy.toml").write_text("not toml [\n")  # the cwd's policy must not be used
    rms_norm = tree / "src/inferno/models/common/ops/rms_norm.py"
    heavy_buffer = rms_norm.read_text().replace(
        '"""RMS norm."""\n', '"""RMS norm."""\nfrom inferno.distributed import parallel_state\n'
    )
    select = ["--select", "IPL", "-"]
    runs = _run_all(
        ([*select, "--stdin-display-name", OPS_INIT], tree, {"stdin": seeded}),
        ([*select, "--stdin-display-name", OPS_INIT[4:]], tree / "src", {"stdin": seeded}),
        ([*select, "--stdin-display-name", str(tree / OPS_INIT)], elsewhere, {"stdin": seeded}),
        ([*select, "--stdin-display-name", str(rms_norm)], elsewhere, {"stdin": heavy_buffer}),
        (select, tree, {"stdin": seeded}),  # no display name: "stdin"
        ([*select, "--stdin-display-name", str(tmp_path / "x.py")], tree, {"stdin": seeded}),
    )
    relative, other_cwd, absolute, deep, no_name, outside = runs
    assert relative.found() == {(OPS_INIT, 6, 0, "IPL001")}, relative
    assert other_cwd.found() == {(OPS_INIT[4:], 6, 0, "IPL001")}, other_cwd
    assert absolute.found() == {(str(tree / OPS_INIT), 6, 0, "IPL001")}, absolute
    assert deep.found() == {(str(rms_norm), 2, 0, "IPL002")}, deep
    assert "IPL002 this import makes light module inferno.models.common.ops import " in deep.stdout
    for run in (no_name, outside):
        assert (run.returncode, run.stdout, run.stderr) == (0, "", ""), run

    # The other way round: the disk has the line, the unsaved buffer has removed it.
    (tree / OPS_INIT).write_text(seeded)
    clean = (tree / OPS_INIT).read_text().replace(SEED_LINE, "")
    run = _flake8([*select, "--stdin-display-name", OPS_INIT], tree, stdin=clean)
    assert (run.returncode, run.stdout, run.stderr) == (0, "", ""), run


# -- CI: -j N under every start method ---------------------------------------------------------------


def test_jobs_under_fork_spawn_and_forkserver(tmp_path: Path) -> None:
    jobs = []
    for method in ("serial", "fork", "spawn", "forkserver"):
        tree = _copy("project", tmp_path / method)  # each starts with a cold cache
        args = ["--select", "IPL", "-j", "1" if method == "serial" else "2", "src"]
        start = None if method == "serial" else method
        jobs.append((args, tree, {"start_method": start}))
    serial, *parallel = _run_all(*jobs)
    assert serial.matches(PROJECT_WITHOUT_CONFIG), serial
    for run in parallel:
        assert (run.returncode, run.stdout, run.stderr) == (1, serial.stdout, ""), run


# -- never crash flake8 -------------------------------------------------------------------------------


BROKEN_AT_1 = "IPL900 policy.toml:4: settings.externl: unknown key; did you mean 'external'?"


def test_broken_policy_is_ipl900_in_every_checked_file_and_flake8_goes_on(tmp_path: Path) -> None:
    """An editor must not look clean: flake8 once stopped with a "critical error" on stdout (exit 1),
    which pylsp and the VS Code flake8 extension parse as no diagnostics, hiding F401 too. Now each
    checked file gets one IPL900 at line 1 (the policy's file, line and key), the other plugins still
    report, serially, with -j 2 and on stdin; flake8's exit status is 1 as for any reported error."""
    tree = _copy("project", tmp_path)
    policy = tree / "policy.toml"
    policy.write_text(policy.read_text().replace("[settings]\n", '[settings]\nexternl = "stop"\n'))
    (tree / "src" / "unused.py").write_text("import os\n")
    files = sorted(str(p.relative_to(tree)) for p in (tree / "src").rglob("*.py")
                   if not (p.read_text().splitlines() or [""])[0].endswith("# noqa"))  # flake8 obeys a bare noqa
    serial, parallel, stdin, unselected = _run_all(
        (["src"], tree, {}),
        (["-j", "2", "src"], tree, {}),
        (["--stdin-display-name", "src/unused.py", "-"], tree, {"stdin": "import os\n"}),
        (["--select", "E999,F", "src"], tree, {}),
    )
    for run in (serial, parallel):
        assert (run.returncode, run.stderr) == (1, ""), run
        assert sorted(line for line in run.lines if " IPL900 " in line) == sorted(
            f"{name}:1:1: {BROKEN_AT_1}" for name in files), run
        assert "src/unused.py:1:1: F401 'os' imported but unused" in run.lines, run
        assert CRITICAL not in run.stdout
    assert (stdin.returncode, stdin.lines) == (1, [
        f"src/unused.py:1:1: {BROKEN_AT_1}", "src/unused.py:1:1: F401 'os' imported but unused"]), stdin
    assert unselected.returncode == 1 and " IPL" not in unselected.stdout, unselected
    assert "src/unused.py:1:1: F401 'os' imported but unused" in unselected.lines, unselected


def test_unanalysable_modules_elsewhere_stop_the_chain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = _copy("broken", tmp_path)
    whole, light = _run_all(
        (["src"], tree, {}),
        (["--select", "IPL,E9", "src/app/light.py"], tree, {}),
    )
    reported, expected = compare_expectations(whole.reported("IPL"), read_expectations(tree))
    assert reported == expected, whole
    assert {(path, code) for path, _, _, code in whole.found("E9")} == {
        ("src/app/bad_syntax.py", "E999"), ("src/app/nul_byte.py", "E999"),
    }, whole  # flake8's own labels, on the broken files only
    assert light.found("") == {("src/app/light.py", 4, 0, "IPL001")}, light
    assert whole.stderr == light.stderr == ""

    monkeypatch.chdir(tree)
    assert cli.main(["why", "app.light", "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "cannot analyse app.bad_syntax: line 3: invalid syntax" in out
    assert "cannot analyse app.nul_byte: line 1:" in out
    assert "cannot analyse app.bad_encoding: line 2:" in out


def test_explicit_policy_option_and_config(tmp_path: Path) -> None:
    tree = _copy("project", tmp_path)
    (tree / "policies").mkdir()
    (tree / "policy.toml").rename(tree / "policies/strict.toml")
    strict = tree / "policies/strict.toml"
    strict.write_text(strict.read_text().replace('["src"]', '["../src"]'))
    configured = tmp_path / "configured"
    shutil.copytree(tree, configured)
    (configured / ".flake8").write_text("[flake8]\nimport-policy = policies/strict.toml\n")
    found, option, config, missing = _run_all(
        (["--select", "IPL", "src"], tree, {}),
        (["--select", "IPL", "--import-policy", "policies/strict.toml", "src"], tree, {}),
        (["--select", "IPL", "src"], configured, {}),
        (["--select", "IPL", "--import-policy", "nope.toml", "src/shop/api.py"], tree, {}),
    )
    assert (found.returncode, found.stdout) == (0, ""), found  # no policy.toml to find
    assert option.matches(PROJECT_WITHOUT_CONFIG) and config.matches(PROJECT_WITHOUT_CONFIG), (option, config)
    assert f"(initialises CUDA): shop.api -> shop.engine ({tree}/src/shop/api.py:3)" in option.stdout
    assert (missing.returncode, missing.stdout) == (
        1, "src/shop/api.py:1:1: IPL900 nope.toml: cannot read: No such file or directory\n")


# -- per_file, in process -----------------------------------------------------------------------------


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_policy_discovery_walks_up_and_wants_a_table(tmp_path: Path) -> None:
    _tree(tmp_path, {
        "a/policy.toml": "version = 1\n",
        "a/pyproject.toml": "[tool.importpolicy]\n",
        "a/b/pyproject.toml": "[tool.other]\n",
        "a/b/c/pyproject.toml": "# importpolicy lives in ../../policy.toml\n",
        "a/b/c/d/pyproject.toml": "[tool.importpolicy.heavy]\n",
        "a/b/c/d/e/x.py": "",
    })
    checker = PerFileChecker()
    found = {}
    for directory in ("a", "a/b", "a/b/c", "a/b/c/d", "a/b/c/d/e"):
        start = (tmp_path / directory).resolve()
        assert checker.find_findings(start / "x.py") == ()
        assert checker._policy_for(str(start)) == str(find_policy(start)), directory
        found[directory] = find_policy(start).relative_to(tmp_path.resolve()).as_posix()
    # policy.toml (of ours) wins; a pyproject.toml counts only with a [tool.importpolicy] table.
    assert found == {
        "a": "a/policy.toml", "a/b": "a/policy.toml", "a/b/c": "a/policy.toml",
        "a/b/c/d": "a/b/c/d/pyproject.toml", "a/b/c/d/e": "a/b/c/d/pyproject.toml",
    }


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("policy.toml", ""),
        ("policy.toml", '[settings]\ncache-dir = "../cache"\n'),
        ("policy.toml", '[settings]\n"cache\\u002ddir" = "/tmp/elsewhere"\n'),
        ("pyproject.toml", '[tool.importpolicy.settings]\ncache-dir = "build/c"\n'),
        ("policy.toml", '[heavy]\n"x" = "y"\n[ settings ]  # mine\ncache-dir   =  "c d"  # here\n'),
        ("policy.toml", '[settings]\ncache-dir = "a"\n[light."x"]\nreason = """cache-dir = "b" """\n'),
        ("policy.toml", '["settings"]\ncache-dir = "quoted"\n'),
        ("pyproject.toml", '[settings]\ncache-dir = "elsewhere"\n[tool.importpolicy]\n'),
    ],
)
def test_quick_cache_dir_matches_the_policy(tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    quick = find_cache_dir(str(path), path.read_bytes())
    assert quick == str(load_policy(path).settings.cache_dir)


def test_warm_answer_does_not_import_the_engine(tmp_path: Path) -> None:
    tree = _copy("project", tmp_path)
    api = tree / "src/shop/api.py"
    cold = PerFileChecker().find_findings(api)
    assert [f.code for f in cold] == ["IPL001"]
    program = (
        "import sys\n"
        "from flake8_importpolicy.answers.per_file import PerFileChecker\n"
        f"found = PerFileChecker().find_findings({str(api)!r}, open({str(api)!r}).read())\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('flake8_importpolicy'))\n"
        "print([f.code for f in found], loaded, 'hashlib' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=HANG_CATCHER
    ).stdout
    assert out == (
        "['IPL001'] ['flake8_importpolicy', 'flake8_importpolicy.answers',"
        " 'flake8_importpolicy.answers.freshness', 'flake8_importpolicy.answers.jsonfile',"
        " 'flake8_importpolicy.answers.per_file', 'flake8_importpolicy.answers.roots',"
        " 'flake8_importpolicy.answers.warm_index', 'flake8_importpolicy.config',"
        " 'flake8_importpolicy.config.locate', 'flake8_importpolicy.model',"
        " 'flake8_importpolicy.model.environment', 'flake8_importpolicy.model.files',"
        " 'flake8_importpolicy.model.reading']"
        " False\n"
    )


def test_index_follows_edits_on_disk(tmp_path: Path) -> None:
    tree = _copy("seed", tmp_path)
    deep = tree / "src/inferno/models/common/ops/fused_allreduce_rms_norm.py"
    assert PerFileChecker().find_findings(deep) == ()
    (tree / OPS_INIT).write_text(_seed(tree))
    found = PerFileChecker().find_findings(deep)
    assert [(f.line, f.col, f.code) for f in found] == [(1, 0, "IPL002")]
    (tree / OPS_INIT).write_text(_seed(tree).replace(SEED_LINE, ""))
    assert PerFileChecker().find_findings(deep) == ()


def test_buffer_outside_every_closure_is_not_rechecked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _copy("project", tmp_path)
    checker = PerFileChecker()
    unrelated = tree / "src/shop/unrelated.py"
    assert checker.find_findings(unrelated) == ()

    def fail(*args: object) -> None:
        raise AssertionError("re-checked a buffer that cannot change any answer")

    monkeypatch.setattr(PerFileChecker, "_check_buffer", fail)
    assert checker.find_findings(unrelated, "import shop.api\nimport shop.gpu\n") == ()
    kernels = tree / "src/shop/kernels.py"
    text = kernels.read_text()
    for same in (text.replace("\n", "\r\n"), "\ufeff" + text):  # what flake8 may hand over
        assert [f.code for f in checker.find_findings(kernels, same)] == ["IPL002"]


def test_unwritable_cache_dir_still_answers(tmp_path: Path) -> None:
    tree = _copy("project", tmp_path)
    policy = tree / "policy.toml"
    policy.write_text(
        policy.read_text().replace("[settings]\n", '[settings]\ncache-dir = "policy.toml/cache"\n')
    )
    for _ in range(2):
        found = PerFileChecker().find_findings(tree / "src/shop/cli.py")
        assert [f.code for f in found] == ["IPL001"]


def test_unexpected_errors_become_one_ipl900(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(self: PerFileChecker, path: object, text: object = None) -> None:
        raise SyntaxError("invalid syntax")  # flake8 would report it as E999 in the checked file

    monkeypatch.setattr(PerFileChecker, "find_findings", fail)
    monkeypatch.setattr(ImportPolicyChecker, "_checker", None)
    checker = ImportPolicyChecker(ast.parse(""), "src/x.py", ["x = 1\n"])
    ((line, col, text, _),) = list(checker.run())
    assert (line, col) == (1, 0)
    assert text == ("IPL900 src/x.py: flake8-importpolicy failed: SyntaxError: invalid syntax; this is "
                    "a bug, please report it (--extend-ignore=IPL900 hides it)")


def test_ipl006_only_when_selected_by_its_own_code(tmp_path: Path) -> None:
    """Unresolved import-time code is information: flake8 reports it, at the light module's statement
    that leads there, only when IPL006 itself is selected (the prefix IPL does not turn it on)."""
    tree = Path(shutil.copytree(Path(__file__).parent / "fixtures" / "x_unresolved", tmp_path / "t"))
    default, prefix, own, extended = _run_all(
        (["app"], tree, {}),
        (["--select", "IPL", "app"], tree, {}),
        (["--select", "IPL,IPL006", "app"], tree, {}),
        (["--extend-select", "IPL006", "app"], tree, {}),
    )
    assert default.found("IPL006") == prefix.found("IPL006") == set(), (default, prefix)
    expected = {("app/light.py", line, 0, "IPL006") for line in (2, 4, 5, 6, 7)}
    assert own.found("IPL006") == extended.found("IPL006") == expected, (own, extended)
    assert own.found("IPL001") == default.found("IPL001") == {
        ("app/light.py", 4, 0, "IPL001"), ("app/light.py", 6, 0, "IPL001")
    }
    assert (
        "app/light.py:2:1: IPL006 light module app.light runs import-time code that cannot be "
        "resolved: dynamic-import importlib.import_module(name) at app/dyn.py:5: app.light -> "
        "app.dyn (app/light.py:2)"
    ) in own.lines
    assert all(run.stderr == "" for run in (default, prefix, own, extended))
