"""The mypy plugin, end to end: real ``mypy`` runs on copies of ``tests/fixtures_mypy/seed``.

Every test copies the fixture into its own temporary directory, so each has its own mypy cache and
importpolicy cache: its first run is cold, later ones are warm. A run costs about a second (a parallel
one about two), so scenarios share their cold run between assertions.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from flake8_importpolicy.analysis.engine import PolicyEngine
from flake8_importpolicy.config.load import load_policy
from flake8_importpolicy.output.render import format_violation_message

SEED = Path(__file__).parent / "fixtures_mypy" / "seed"
REPO = Path(__file__).parent.parent
CODE = Path(str(importlib.util.find_spec("mypy_plugin").origin)).resolve().parent.parent
"""Where the plugin under test lives: mypy runs put it first on ``PYTHONPATH``."""

OPS_INIT = "src/inferno/models/common/ops/__init__.py"
STATE = "src/inferno/distributed/parallel_state.py"
REEXPORT = "from .fused_allreduce_rms_norm import fused_allreduce_rms_norm\n"
IPL001 = (
    f"{OPS_INIT}:7: error: IPL001 light module inferno.models.common.ops imports inferno.config at import "
    "time (initialises CUDA when imported; a forked engine worker then dies): inferno.models.common.ops "
    f"-> inferno.models.common.ops.fused_allreduce_rms_norm ({OPS_INIT}:7) "
    "-> inferno.distributed.parallel_state (src/inferno/models/common/ops/fused_allreduce_rms_norm.py:1) "
    f"-> inferno.config ({STATE}:1)  [import-policy]"
)
FOUND_ONE = "Found 1 error in 1 file (checked 9 source files)"
CLEAN = "Success: no issues found in 9 source files"

STATE_TYPE_CHECKING = """\
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from inferno.config import WORLD_SIZE
else:
    WORLD_SIZE = 1


def get_world_size() -> int:
    return WORLD_SIZE
"""
STATE_TOP_LEVEL = """\
from inferno.config import WORLD_SIZE

if not WORLD_SIZE:
    WORLD_SIZE = 1


def get_world_size() -> int:
    return WORLD_SIZE
"""


@pytest.fixture(scope="module")
def stdlib_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A mypy cache of the standard library stubs alone, written once with the seed's configuration."""
    root = tmp_path_factory.mktemp("stdlib") / "seed"
    shutil.copytree(SEED, root)
    assert run_mypy(root, "-c", "import typing")[0] == 0
    return root / ".mypy_cache"


@pytest.fixture
def cold_seed(tmp_path: Path) -> Path:
    """A fresh copy of the seed fixture, with its own (empty) mypy and importpolicy caches."""
    root = tmp_path / "seed"
    shutil.copytree(SEED, root)
    return root


@pytest.fixture
def seed(cold_seed: Path, stdlib_cache: Path) -> Path:
    """A fresh copy of the seed fixture whose mypy cache holds the standard library only (a second per
    mypy run saved): the project and the plugin start cold."""
    shutil.copytree(stdlib_cache, cold_seed / ".mypy_cache")
    return cold_seed


def clean_env() -> dict[str, str]:
    """The environment of a mypy run: none of the caller's MYPY* or PYTHON* variables, except that the
    code under test comes first on ``PYTHONPATH`` (an editable install may point at another checkout)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MYPY", "PYTHON"))}
    env["PYTHONPATH"] = str(CODE)
    return env


def run_mypy(root: Path, *args: str, mypypath: str | None = None) -> tuple[int, list[str], str]:
    """``mypy -p inferno`` (or ``args``) in ``root``: exit status, stdout lines, stderr."""
    env = clean_env()
    if mypypath is not None:
        env["MYPYPATH"] = mypypath
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", *(args or ("-p", "inferno"))],
        cwd=root, env=env, capture_output=True, text=True, timeout=300,
    )
    return proc.returncode, proc.stdout.splitlines(), proc.stderr


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new))


# -- runs, caches, parallel ----------------------------------------------------------------------


def test_cold_and_warm_runs_report_the_same(cold_seed: Path) -> None:
    cold = run_mypy(cold_seed)
    assert cold == (1, [IPL001, FOUND_ONE], "")
    assert run_mypy(cold_seed) == cold


def test_warm_index_and_a_light_module_rechecked(seed: Path) -> None:
    """The index stays valid while another option makes mypy re-check every module: the plugin then
    finds mypy's error log only when it reports (not in set_modules, as on a cold run)."""
    assert run_mypy(seed) == (1, [IPL001, FOUND_ONE], "")
    assert run_mypy(seed, "-p", "inferno", "--warn-unreachable") == (1, [IPL001, FOUND_ONE], "")


def test_message_is_the_engine_text_the_flake8_checker_shows(seed: Path) -> None:
    policy = load_policy(seed / "policy.toml")
    (violation,) = PolicyEngine(policy).check().violations
    text = format_violation_message(violation, policy.relpath)
    assert IPL001 == f"{policy.relpath(violation.path)}:{violation.line}: error: {text}  [import-policy]"
    if importlib.util.find_spec("flake8_importpolicy.flake8_checker") is not None:
        flake8 = subprocess.run([sys.executable, "-m", "flake8", "--select", "IPL001", OPS_INIT],
                                cwd=seed, capture_output=True, text=True, timeout=300)
        assert flake8.stdout == f"{OPS_INIT}:7:1: {text}\n"


def test_parallel_cold_and_warm(cold_seed: Path) -> None:
    parallel = ("-p", "inferno", "-n", "2")
    assert run_mypy(cold_seed, *parallel) == (1, [IPL001, FOUND_ONE], "")
    assert run_mypy(cold_seed, *parallel) == (1, [IPL001, FOUND_ONE], "")
    # A warm parallel run re-checks the light module after an interface-free dependency edit.
    (cold_seed / STATE).write_text(STATE_TYPE_CHECKING)
    assert run_mypy(cold_seed, *parallel) == (0, [CLEAN], "")
    (cold_seed / STATE).write_text(STATE_TOP_LEVEL)
    assert run_mypy(cold_seed, *parallel) == (1, [IPL001, FOUND_ONE], "")


@pytest.mark.parametrize("jobs", [(), ("-n", "2")], ids=["serial", "parallel"])
def test_a_run_on_another_copy_does_not_make_this_one_fresh(cold_seed: Path, jobs: tuple[str, ...]) -> None:
    """Two copies of the package: mypy's cache entry of a module is keyed by its name, so the plugin's
    digest names the file it shows findings in; the other copy shows nothing (another file than the
    engine analysed) and its digest is None."""
    shutil.copytree(cold_seed / "src", cold_seed / "other")
    other = ("-p", "inferno", *jobs)
    assert run_mypy(cold_seed, *other, mypypath="other") == (0, [CLEAN], "")
    assert run_mypy(cold_seed, "src/inferno", *jobs) == (1, [IPL001, FOUND_ONE], "")
    assert run_mypy(cold_seed, *other, mypypath="other") == (0, [CLEAN], "")
    assert run_mypy(cold_seed, "src/inferno", *jobs) == (1, [IPL001, FOUND_ONE], "")


def test_seed_before_and_after_the_reexport(seed: Path) -> None:
    edit(seed / OPS_INIT, REEXPORT, "\n")
    assert run_mypy(seed) == (0, [CLEAN], "")
    edit(seed / OPS_INIT, "import rms_norm\n\n\n", f"import rms_norm\n\n{REEXPORT}")
    assert run_mypy(seed) == (1, [IPL001, FOUND_ONE], "")


def test_dependency_edit_that_changes_no_interface_is_seen_warm(seed: Path) -> None:
    """Moving ``import heavy`` out of ``if TYPE_CHECKING:`` changes no interface mypy sees."""
    (seed / STATE).write_text(STATE_TYPE_CHECKING)
    assert run_mypy(seed) == (0, [CLEAN], "")
    (seed / STATE).write_text(STATE_TOP_LEVEL)
    assert run_mypy(seed) == (1, [IPL001, FOUND_ONE], "")
    (seed / STATE).write_text(STATE_TYPE_CHECKING)
    assert run_mypy(seed) == (0, [CLEAN], "")


def test_policy_edit_adds_and_removes_findings_warm(seed: Path) -> None:
    policy = seed / "policy.toml"
    original = policy.read_text()
    assert run_mypy(seed)[0] == 1
    edit(policy, '"inferno.config" =', '"inferno.cuda" =')
    assert run_mypy(seed) == (0, [CLEAN], "")
    policy.write_text(original + (
        '\n[light."inferno.modles"]\nreason = "typo"\n'
        '\n[[ignore]]\nimport = "inferno.distributed.parallel_state -> inferno.nothing"\nreason = "old"\n'
    ))
    assert run_mypy(seed) == (1, [
        f"{OPS_INIT}:1: error: IPL003 light pattern 'inferno.modles' matches no module (policy.toml:12)"
        "  [import-policy]",
        f"{OPS_INIT}:1: error: IPL004 [[ignore]] entry 'inferno.distributed.parallel_state -> "
        "inferno.nothing' matches no import in any light module's import-time closure (policy.toml:16)"
        "  [import-policy]",
        IPL001,
        "Found 3 errors in 1 file (checked 9 source files)",
    ], "")


# -- suppression and what mypy checks ------------------------------------------------------------


def test_disable_error_code(seed: Path) -> None:
    assert run_mypy(seed, "-p", "inferno", "--disable-error-code", "import-policy") == (0, [CLEAN], "")


@pytest.mark.parametrize("comment", ["# type: ignore[import-policy]", "# noqa: IPL001"])
def test_comment_on_the_import_line_suppresses(seed: Path, comment: str) -> None:
    edit(seed / OPS_INIT, REEXPORT, f"{REEXPORT[:-1]}  {comment}\n")
    # --warn-unused-ignores: a "type: ignore" that suppressed nothing would be an error itself.
    assert run_mypy(seed, "-p", "inferno", "--warn-unused-ignores") == (0, [CLEAN], "")


def test_light_package_reached_only_by_following_imports(seed: Path) -> None:
    found = run_mypy(seed, "app/main.py")
    assert found == (1, [IPL001, "Found 1 error in 1 file (checked 1 source file)"], "")
    silent = run_mypy(seed, "app/main.py", "--follow-imports", "silent")
    assert silent == (0, ["Success: no issues found in 1 source file"], "")


def test_dmypy_reports_nothing(seed: Path) -> None:
    """Unsupported (docs/mypy.md): inert rather than showing findings that vanish or go stale."""
    env = clean_env()
    dmypy = [sys.executable, "-m", "mypy.dmypy", "--status-file", str(seed / ".dmypy.json")]
    try:
        run = subprocess.run([*dmypy, "run", "--", "-p", "inferno"], cwd=seed, env=env,
                             capture_output=True, text=True, timeout=300)
        assert (run.returncode, run.stdout.splitlines()[-1]) == (0, CLEAN)
    finally:
        subprocess.run([*dmypy, "stop"], cwd=seed, env=env, capture_output=True, timeout=60)


# -- configuration -------------------------------------------------------------------------------


def test_importpolicy_section_overrides_the_policy_found(seed: Path) -> None:
    (seed / "conf").mkdir()
    (seed / "conf" / "strict.toml").write_text(
        (seed / "policy.toml").read_text()
        .replace('"src"', '"../src"')
        .replace('"inferno.config" = "initialises', '"inferno.distributed" = "initialises')
    )
    (seed / "conf" / "mypy.ini").write_text(
        "[mypy]\nplugins = mypy_plugin\nmypy_path = src\n\n[importpolicy]\npolicy = strict.toml\n"
    )
    status, out, err = run_mypy(seed, "--config-file", "conf/mypy.ini", "-p", "inferno")
    assert (status, err) == (1, "")
    assert out[0].startswith(f"{OPS_INIT}:7: error: IPL001 light module inferno.models.common.ops "
                             "imports inferno.distributed at import time")


BROKEN = [
    pytest.param("[importpolicy]\npolicy = missing.toml\n", None,
                 "mypy.ini:6: error: [importpolicy] policy = missing.toml: no such file missing.toml",
                 id="missing-policy-file"),
    pytest.param("[importpolicy]\npolcy = policy.toml\n", None,
                 "mypy.ini:6: error: [importpolicy] has no key 'polcy'; its only key is 'policy'",
                 id="unknown-key"),
    pytest.param("", "version = 1\n[heavy\n",
                 "policy.toml:2: error: invalid TOML: Expected ']' at the end of a table declaration",
                 id="invalid-toml"),
    pytest.param("", 'version = 1\n[settings]\nexternl = "stop"\n[light."a"]\nforbid = []\n',
                 "policy.toml: error: not valid (2 problems): settings.externl: unknown key; did you mean "
                 "'external'?; light.\"a\".reason: missing; every light module needs a reason (why it must "
                 "stay light)",
                 id="invalid-policy"),
]


@pytest.mark.parametrize(("section", "policy", "expected"), BROKEN)
def test_broken_config_is_one_line_and_exit_2(
    seed: Path, section: str, policy: str | None, expected: str
) -> None:
    with (seed / "mypy.ini").open("a") as handle:
        handle.write(f"\n{section}")
    if policy is not None:
        (seed / "policy.toml").write_text(policy)
    status, _out, err = run_mypy(seed)
    assert (status, err.splitlines()) == (2, [expected])


def test_no_policy_found(tmp_path: Path) -> None:
    (tmp_path / "mypy.ini").write_text("[mypy]\nplugins = mypy_plugin\n")
    (tmp_path / "m.py").write_text("x = 1\n")
    status, _out, err = run_mypy(tmp_path, "m.py")
    assert status == 2
    assert err.startswith("mypy.ini: error: no policy.toml or pyproject.toml with [tool.importpolicy] found")
    assert len(err.splitlines()) == 1


def test_the_plugin_imports_neither_flake8_nor_the_engine() -> None:
    """The repository's own policy.toml: mypy_plugin stays off flake8, pytest and (until a cache miss)
    the engine."""
    engine = PolicyEngine(load_policy(REPO / "policy.toml"))
    for light in (
        "mypy_plugin", "flake8_importpolicy.answers.by_module", "flake8_importpolicy.answers.warm_index"
    ):
        violations = engine.check_light_module(light, engine.policy.rules_for(light)).violations
        assert violations == [], light


def test_a_warm_answer_does_not_import_the_engine(seed: Path) -> None:
    probe = (
        "import sys; from flake8_importpolicy.answers.by_module import find_module_findings; "
        "found = find_module_findings(sys.argv[1]); "
        "print(sorted(found.findings), 'flake8_importpolicy.analysis.engine' in sys.modules)"
    )
    policy = str((seed / "policy.toml").resolve())
    runs = [
        subprocess.run([sys.executable, "-c", probe, policy], capture_output=True, text=True, check=True)
        for _ in range(2)
    ]
    assert [run.stdout for run in runs] == [
        "['inferno.models.common.ops'] True\n",  # cold: the engine checks and writes the index
        "['inferno.models.common.ops'] False\n",  # warm: the index answers
    ]


def test_the_helper_answers_the_interpreter_query_itself(
    cold_seed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index-building helper is a fresh interpreter started like the engine's interpreter query (in an
    empty directory): its own answer, stored in the interpreter cache, is the query's."""
    import tempfile

    from flake8_importpolicy.analysis.resolve import query_interpreter
    from flake8_importpolicy.answers.by_module import (
        find_module_findings,
        start_index_build,
    )
    from flake8_importpolicy.answers.jsonfile import read_json_sealed
    from flake8_importpolicy.model.interpreter import InterpreterInfo

    made: list[str] = []
    mkdtemp = tempfile.mkdtemp

    def recording_mkdtemp(*args: object, **kwargs: object) -> str:
        made.append(mkdtemp(*args, **kwargs))  # type: ignore[call-overload]
        return made[-1]

    monkeypatch.setattr(tempfile, "mkdtemp", recording_mkdtemp)
    monkeypatch.chdir(cold_seed)
    policy = str((cold_seed / "policy.toml").resolve())
    helper = start_index_build(policy)
    assert helper is not None and helper.wait() == 0
    assert len(made) == 1 and not os.path.exists(made[0])  # the helper removed its empty directory
    (entry,) = (cold_seed / ".importpolicy_cache" / "interpreters").iterdir()
    info = read_json_sealed(entry)["info"]  # type: ignore[index]
    assert InterpreterInfo.from_json(info) == query_interpreter()
    assert sorted(find_module_findings(policy).findings) == ["inferno.models.common.ops"]


def test_unresolved_import_time_code_is_a_note(tmp_path: Path) -> None:
    """IPL006 shows as a note at the light module's statement (exit status unchanged by it), the
    same on a warm run."""
    tree = Path(shutil.copytree(REPO / "tests" / "fixtures" / "x_unresolved", tmp_path / "t"))
    (tree / "mypy.ini").write_text(
        "[mypy]\nplugins = mypy_plugin\nignore_missing_imports = True\nfollow_imports = silent\n"
    )
    cold = run_mypy(tree, "-p", "app")
    status, lines, err = cold
    notes = sorted(line for line in lines if ": note: IPL006 " in line)
    assert sorted({note.split(": note:")[0] for note in notes}) == [
        f"app/light.py:{line}" for line in (2, 4, 5, 6, 7)
    ], lines
    assert len(notes) == 6  # two sites behind line 5
    assert "app/light.py:2: note: IPL006 light module app.light runs import-time code that cannot be " \
        "resolved: dynamic-import importlib.import_module(name) at app/dyn.py:5: app.light -> " \
        "app.dyn (app/light.py:2)" in lines
    assert sorted(line.split(": error:")[0] for line in lines if ": error: IPL001" in line) == [
        "app/light.py:4", "app/light.py:6"
    ]
    assert status == 1 and err == ""
    assert run_mypy(tree, "-p", "app") == cold
