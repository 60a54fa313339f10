"""The mypy plugin, end to end: real ``mypy`` runs on copies of ``tests/fixtures_mypy/seed``.

Every test copies the fixture into its own temporary directory, so each has its own mypy cache and
importpolicy cache: its first run is cold, later ones are warm. A run costs about a second (a parallel
one about two), so scenarios share their cold run between assertions.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import (
    DISTRIBUTIONS,
    DISTRIBUTIONS_LIGHT,
    DOCS_URL,
    HANG_CATCHER,
    INSTALLED_SITES,
    INSTALLED_TP,
    Reported,
    compare_expectations,
    read_expectations,
    write_tree,
)

from flake8_importpolicy.analysis.engine import PolicyEngine
from flake8_importpolicy.config.load import load_policy
from flake8_importpolicy.output.render import format_violation_message

from mypy_venvs import KINDS, OLDEST, Variant, find_variant, newest_version

SEED = Path(__file__).parent / "fixtures_mypy" / "seed"
REPO = Path(__file__).parent.parent
CODE = Path(str(importlib.util.find_spec("flake8_importpolicy").origin)).resolve().parent.parent
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


def run_mypy(
    root: Path, *args: str, mypypath: str | None = None, python: str = sys.executable
) -> tuple[int, list[str], str]:
    """``mypy -p inferno`` (or ``args``) in ``root``: exit status, stdout lines, stderr."""
    env = clean_env()
    if mypypath is not None:
        env["MYPYPATH"] = mypypath
    proc = subprocess.run(
        [python, "-m", "mypy", *(args or ("-p", "inferno"))],
        cwd=root, env=env, capture_output=True, text=True, timeout=HANG_CATCHER,
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
                                cwd=seed, capture_output=True, text=True, timeout=HANG_CATCHER)
        assert flake8.stdout == f"{OPS_INIT}:7:1: {text}\n"


PARALLEL = ("error: flake8_importpolicy.mypy does not support mypy -n 2: a parallel worker may check a "
            f"light module before mypy lets the plugin report ({DOCS_URL}/mypy.md); run mypy "
            "without -n")


def test_parallel_checking_stops_at_the_first_check(cold_seed: Path) -> None:
    """``mypy -n N``: one line and exit status 2, cold and warm, never a silent pass (a worker may
    check a light module before any hook hands the plugin mypy's error log)."""
    parallel = ("-p", "inferno", "-n", "2")
    assert run_mypy(cold_seed, *parallel) == (2, [], PARALLEL + "\n")
    assert run_mypy(cold_seed) == (1, [IPL001, FOUND_ONE], "")
    assert run_mypy(cold_seed, *parallel) == (2, [], PARALLEL + "\n")


def test_a_run_on_another_copy_does_not_make_this_one_fresh(cold_seed: Path) -> None:
    """Two copies of the package: mypy's cache entry of a module is keyed by its name, so the plugin's
    digest names the file it shows findings in; the other copy shows nothing (another file than the
    engine analysed) and its digest is None."""
    shutil.copytree(cold_seed / "src", cold_seed / "other")
    other = ("-p", "inferno")
    assert run_mypy(cold_seed, *other, mypypath="other") == (0, [CLEAN], "")
    assert run_mypy(cold_seed, "src/inferno") == (1, [IPL001, FOUND_ONE], "")
    assert run_mypy(cold_seed, *other, mypypath="other") == (0, [CLEAN], "")
    assert run_mypy(cold_seed, "src/inferno") == (1, [IPL001, FOUND_ONE], "")


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
    edit(policy, '"inferno.config" =', '"sqlite3" =')
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


# -- every mypy build: compiled and pure Python, oldest supported and newest -------------------------

_NEWEST = newest_version()
VARIANTS = [f"{version}-{kind}" for version in dict.fromkeys([OLDEST, _NEWEST or "newest"])
            for kind in KINDS]


@pytest.fixture(scope="session")
def mypy_variant_cache() -> dict[str, Variant | str]:
    """The extra venvs (tests/mypy_venvs.py), built once and kept outside the repository."""
    return {}


@pytest.mark.slow
@pytest.mark.parametrize("variant_id", VARIANTS)
def test_every_mypy_build_reports(
    cold_seed: Path, variant_id: str, mypy_variant_cache: dict[str, Variant | str]
) -> None:
    """Interpreted mypy once printed Success here: the plugin looked for mypy's error log in the heap
    (gc), which only the compiled build let it find. Cold, warm, and warm with only the light module
    re-checked (a policy edit: no hook but the anchor's runs before it), with each build."""
    version, kind = variant_id.rsplit("-", 1)
    if version == "newest":
        pytest.skip("cannot find the newest mypy: the package index cannot be reached")
    if variant_id not in mypy_variant_cache:
        mypy_variant_cache[variant_id] = find_variant(version, kind)
    variant = mypy_variant_cache[variant_id]
    if isinstance(variant, str):
        pytest.skip(variant)
    python = str(variant.python)
    assert run_mypy(cold_seed, python=python) == (1, [IPL001, FOUND_ONE], "")
    assert run_mypy(cold_seed, python=python) == (1, [IPL001, FOUND_ONE], "")
    policy = cold_seed / "policy.toml"
    original = policy.read_text()
    edit(policy, '"inferno.config" =', '"sqlite3" =')
    assert run_mypy(cold_seed, python=python) == (0, [CLEAN], "")
    policy.write_text(original)
    assert run_mypy(cold_seed, python=python) == (1, [IPL001, FOUND_ONE], "")


def test_a_recheck_the_answers_do_not_depend_on_still_reports(seed: Path) -> None:
    """The light module re-checked for an interface change of a type-only import (the engine's
    answers do not depend on it): mypy re-analyses the anchor on every run that has findings, so the
    plugin has mypy's error log there too."""
    (seed / "src/inferno/types_only.py").write_text("class Marker:\n    pass\n")
    with (seed / OPS_INIT).open("a") as handle:
        handle.write("\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                     "    from inferno.types_only import Marker\n")
    found = (1, [IPL001, "Found 1 error in 1 file (checked 10 source files)"], "")
    assert run_mypy(seed) == found
    assert run_mypy(seed) == found
    (seed / "src/inferno/types_only.py").write_text("class Marker:\n    x: int = 0\n")
    assert run_mypy(seed) == found


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


def test_dmypy_stops_at_the_first_check(seed: Path) -> None:
    """The real daemon (``dmypy run``): one line naming the plugin and exit status 2, never Success
    (its fine-grained updates would drop the findings)."""
    env = clean_env()
    dmypy = [sys.executable, "-m", "mypy.dmypy", "--status-file", str(seed / ".dmypy.json")]
    try:
        run = subprocess.run([*dmypy, "run", "--", "-p", "inferno"], cwd=seed, env=env,
                             capture_output=True, text=True, timeout=HANG_CATCHER)
        assert run.returncode == 2, run
        assert "error: flake8_importpolicy.mypy does not support dmypy: the daemon's updates drop " \
            "plugin-reported errors" in run.stdout + run.stderr
        assert "Success" not in run.stdout
    finally:
        subprocess.run([*dmypy, "stop"], cwd=seed, env=env, capture_output=True, timeout=HANG_CATCHER)


# -- configuration -------------------------------------------------------------------------------


def test_importpolicy_section_overrides_the_policy_found(seed: Path) -> None:
    (seed / "conf").mkdir()
    (seed / "conf" / "strict.toml").write_text(
        (seed / "policy.toml").read_text()
        .replace('"src"', '"../src"')
        .replace('"inferno.config" = "initialises', '"inferno.distributed" = "initialises')
    )
    (seed / "conf" / "mypy.ini").write_text(
        "[mypy]\nplugins = flake8_importpolicy.mypy\nmypy_path = src\n\n"
        "[importpolicy]\npolicy = strict.toml\n"
    )
    status, out, err = run_mypy(seed, "--config-file", "conf/mypy.ini", "-p", "inferno")
    assert (status, err) == (1, "")
    assert out[0].startswith(f"{OPS_INIT}:7: error: IPL001 light module inferno.models.common.ops "
                             "imports inferno.distributed at import time")


@pytest.mark.parametrize("where", ["mypy.ini", "pyproject.toml"])
def test_the_plugin_section_names_the_policy_and_silences_notes(tmp_path: Path, where: str) -> None:
    """``[importpolicy-mypy]`` (``[tool.importpolicy-mypy]`` in pyproject.toml, pydantic-mypy style):
    ``policy`` relative to the configuration file, ``unresolved_notes = false`` drops the IPL006
    notes and keeps the IPL001 errors; switching it back shows them again on a warm run."""
    tree = Path(shutil.copytree(REPO / "tests" / "fixtures" / "x_unresolved", tmp_path / "t"))
    (tree / "conf").mkdir()
    policy = (tree / "policy.toml").read_text()
    (tree / "policy.toml").unlink()
    (tree / "conf" / "ipl.toml").write_text('[settings]\nsource-roots = [".."]\n\n' + policy)
    mypy = "plugins = flake8_importpolicy.mypy\nignore_missing_imports = True\nfollow_imports = silent\n"
    if where == "mypy.ini":
        config = "[mypy]\n" + mypy + "\n[importpolicy-mypy]\npolicy = conf/ipl.toml\nunresolved_notes = {}\n"
    else:
        config = ('[tool.mypy]\nplugins = ["flake8_importpolicy.mypy"]\nignore_missing_imports = true\n'
                  'follow_imports = "silent"\n\n[tool.importpolicy-mypy]\npolicy = "conf/ipl.toml"\n'
                  "unresolved_notes = {}\n")
    (tree / where).write_text(config.format("false"))
    status, lines, err = run_mypy(tree, "-p", "app")
    assert (status, err) == (1, "")
    assert not [line for line in lines if ": note: IPL006" in line], lines
    assert len([line for line in lines if ": error: IPL001" in line]) == 2
    (tree / where).write_text(config.format("true"))
    status, lines, err = run_mypy(tree, "-p", "app")
    assert (status, err) == (1, "")
    assert len([line for line in lines if ": note: IPL006" in line]) == 6


@pytest.mark.parametrize("command", ["mypy", "python -m mypy"])
def test_a_project_s_own_mypy_plugin_module_is_not_shadowed(tmp_path: Path, command: str) -> None:
    """Installing the distribution puts no top-level ``mypy_plugin`` on the path: a project's own
    ``mypy_plugin.py`` named in ``plugins = mypy_plugin`` is the one mypy loads (the project's
    directory on ``PYTHONPATH``, as such a project sets it for the ``mypy`` command); without it, the
    ``mypy`` command fails as it would with no flake8-importpolicy installed, never with ours."""
    (tmp_path / "mypy_plugin.py").write_text(
        "import sys\nfrom mypy.plugin import Plugin\n\n\ndef plugin(version):\n"
        "    print('the project s own plugin', file=sys.stderr)\n    return Plugin\n")
    (tmp_path / "mypy.ini").write_text("[mypy]\nplugins = mypy_plugin\n")
    (tmp_path / "m.py").write_text("x = 1\n")
    argv = ([str(Path(sys.executable).with_name("mypy"))] if command == "mypy"
            else [sys.executable, "-m", "mypy"])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MYPY", "PYTHON"))}
    for pythonpath in (str(tmp_path), None):
        run_env = dict(env, PYTHONPATH=pythonpath) if pythonpath else env
        done = subprocess.run([*argv, "m.py"], cwd=tmp_path, env=run_env, capture_output=True, text=True,
                              timeout=HANG_CATCHER)
        output = done.stdout + done.stderr
        assert "importpolicy" not in output and "policy.toml" not in output, output
        if pythonpath or command != "mypy":
            assert (done.returncode, done.stderr) == (0, "the project s own plugin\n"), output
        else:  # the mypy command does not put the working directory on sys.path
            assert "Error importing plugin \"mypy_plugin\": No module named 'mypy_plugin'" in output
    import configparser

    setup = configparser.ConfigParser()
    setup.read(REPO / "setup.cfg")
    assert "mypy_plugin" not in setup["options.packages.find"]["include"].split()


BROKEN = [
    pytest.param("[importpolicy-mypy]\nunresolved_notes = maybe\n", None,
                 "mypy.ini:6: error: [importpolicy-mypy] unresolved_notes = maybe: expected true or false",
                 id="not-a-boolean"),
    pytest.param("[importpolicy]\npolicy = missing.toml\n", None,
                 "mypy.ini:6: error: [importpolicy] policy = missing.toml: no such file missing.toml",
                 id="missing-policy-file"),
    pytest.param("[importpolicy]\npolcy = policy.toml\n", None,
                 "mypy.ini:6: error: [importpolicy] has no key 'polcy'; did you mean 'policy'?",
                 id="unknown-key"),
    pytest.param("", "version = 1\n[heavy\n",
                 "policy.toml:2: error: invalid TOML: Expected ']' at the end of a table declaration",
                 id="invalid-toml"),
    pytest.param("", 'version = 1\n[settings]\nexternl = "stop"\n[light."a"]\nforbid = []\n',
                 "policy.toml:3: error: not valid (2 problems): settings.externl: unknown key; did you mean "
                 "'external'?; light.\"a\".reason: missing; every light module needs a reason (why it must "
                 "stay light)",
                 id="invalid-policy"),
    pytest.param("", 'version = 1\n[settings]\nsource-roots = ["src"]\nexternal = "sometimes"\n',
                 "policy.toml:4: error: settings.external: unknown value \"sometimes\"; expected \"auto\", "
                 "\"follow\" or \"stop\"",
                 id="invalid-value-at-its-line"),
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
    (tmp_path / "mypy.ini").write_text("[mypy]\nplugins = flake8_importpolicy.mypy\n")
    (tmp_path / "m.py").write_text("x = 1\n")
    status, _out, err = run_mypy(tmp_path, "m.py")
    assert status == 2
    assert err.startswith("mypy.ini: error: no policy.toml or pyproject.toml with [tool.importpolicy] found")
    assert len(err.splitlines()) == 1


def test_the_plugin_imports_neither_flake8_nor_the_engine() -> None:
    """The repository's own policy.toml: the mypy plugin stays off flake8, pytest and (until a cache miss)
    the engine."""
    engine = PolicyEngine(load_policy(REPO / "policy.toml"))
    for light in (
        "flake8_importpolicy.mypy", "flake8_importpolicy.answers.by_module",
        "flake8_importpolicy.answers.warm_index",
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
        subprocess.run([sys.executable, "-c", probe, policy], capture_output=True, text=True, check=True,
                       timeout=HANG_CATCHER)
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
    assert helper is not None and helper.wait(timeout=HANG_CATCHER) == 0
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
        "[mypy]\nplugins = flake8_importpolicy.mypy\nignore_missing_imports = True\nfollow_imports = silent\n"
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


def test_unresolved_sites_of_an_installed_package_are_one_note(tmp_path: Path) -> None:
    """The IPL006 sites of one light module in one installed package are one note at the light
    module's statement that leads there, as in the text report and flake8
    (tests/test_cli.py test_unresolved_sites_of_an_installed_package_are_one_entry)."""
    tree = write_tree(tmp_path / "proj", INSTALLED_SITES)
    site = write_tree(tmp_path / "site", INSTALLED_TP)
    (tree / "mypy.ini").write_text(
        "[mypy]\nplugins = flake8_importpolicy.mypy\nignore_missing_imports = True\n"
        "follow_imports = silent\n"
    )
    env = {**clean_env(), "PYTHONPATH": os.pathsep.join((str(CODE), str(site)))}
    proc = subprocess.run([sys.executable, "-m", "mypy", "-p", "app"], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=HANG_CATCHER)
    notes = [line for line in proc.stdout.splitlines() if ": note: IPL006 " in line]
    assert notes == [
        "app/light.py:2: note: IPL006 light module app.light runs import-time code that cannot be "
        "resolved in installed package tp: 4 sites (call-through-variable 3, dynamic-import 1); "
        "--format json lists them",
        "app/light.py:3: note: IPL006 light module app.light runs import-time code that cannot be "
        "resolved: dynamic-import importlib.import_module(__name__ + str(X)) at app/dyn.py:3: "
        "app.light -> app.dyn (app/light.py:3)",
    ], proc


def test_unresolved_sites_are_one_note_per_distribution(tmp_path: Path) -> None:
    """mypy groups the IPL006 sites of installed code as the text report and flake8 do
    (tests/test_cli.py test_installed_sites_are_grouped_per_distribution): one note per
    distribution, a single-site package too, and the first-party site on its own."""
    tree = write_tree(tmp_path / "proj", {
        **INSTALLED_SITES, "app/light.py": DISTRIBUTIONS_LIGHT + "from app.dyn import X\n",
    })
    site = write_tree(tmp_path / "site", DISTRIBUTIONS)
    (tree / "mypy.ini").write_text(
        "[mypy]\nplugins = flake8_importpolicy.mypy\nignore_missing_imports = True\n"
        "follow_imports = silent\n"
    )
    env = {**clean_env(), "PYTHONPATH": os.pathsep.join((str(CODE), str(site)))}
    proc = subprocess.run([sys.executable, "-m", "mypy", "-p", "app"], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=HANG_CATCHER)
    notes = [line for line in proc.stdout.splitlines() if ": note: IPL006 " in line]
    head = "note: IPL006 light module app.light runs import-time code that cannot be resolved"
    assert notes == [
        f"app/light.py:1: {head} in installed package dist: 2 sites (dynamic-import 1, exec 1); "
        "--format json lists them",
        f"app/light.py:3: {head} in installed package rec: 2 sites (exec 2); --format json lists "
        "them",
        f"app/light.py:5: {head} in installed package loose: 1 site (exec 1); --format json lists "
        "it",
        f"app/light.py:6: {head}: dynamic-import importlib.import_module(__name__ + str(X)) at "
        "app/dyn.py:3: app.light -> app.dyn (app/light.py:6)",
    ], proc


# -- the fixture walker: positions, codes and messages ---------------------------------------------

WALKED = [tree for tree in sorted(SEED.parent.iterdir()) if read_expectations(tree)]
"""The trees of ``tests/fixtures_mypy`` with inline expectations (the seed has none: the tests above
edit it); their ``mypy.ini`` turns on ``show_column_numbers``."""
_MYPY_LINE = re.compile(
    r"(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?:error|note): (?P<code>IPL\d{3}) (?P<text>.*?)"
    r"(?:  \[import-policy\])?"
)


@pytest.mark.parametrize("root", WALKED, ids=[tree.name for tree in WALKED])
def test_inline_expectations(root: Path, tmp_path: Path) -> None:
    """mypy reports exactly the tree's inline expectations (``# IPL001: 4 app.heavy``): the line, the
    column (mypy shows it 1-based), the code and the message's distinguishing part."""
    tree = Path(shutil.copytree(root, tmp_path / root.name))
    status, lines, err = run_mypy(tree, ".")
    found = [
        Reported(match["path"], int(match["line"]), match["code"], int(match["col"]) - 1, match["text"])
        for match in map(_MYPY_LINE.fullmatch, lines) if match
    ]
    reported, expected = compare_expectations(found, read_expectations(tree))
    assert reported == expected, lines
    assert (status, err) == (1 if any(e.code != "IPL006" for e in expected) else 0, "")
