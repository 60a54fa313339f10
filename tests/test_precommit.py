"""The pre-commit hook (``.pre-commit-hooks.yaml``), run by pre-commit itself on fixture repositories.

pre-commit consumes a hook repository as a user's ``.pre-commit-config.yaml`` names it (``repo:`` +
``rev:``): it clones the repository, installs it into a virtualenv with pip (``language: python``) and
runs the hook's ``entry`` from the checked repository's root. The hook repository here is a git
repository holding this working tree, uncommitted changes included (as ``pre-commit try-repo`` would
make); one pre-commit home is shared by the tests, so the hook is installed once (pip needs the package
index for the build requirements).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from helpers import HANG_CATCHER, make_venv

pytest.importorskip("pre_commit")

REPO = Path(__file__).resolve().parents[1]
HOOK_ID = "importpolicy-check"

_GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "importpolicy tests",
    "GIT_AUTHOR_EMAIL": "tests@example.invalid",
    "GIT_COMMITTER_NAME": "importpolicy tests",
    "GIT_COMMITTER_EMAIL": "tests@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=_GIT_ENV, check=True, capture_output=True, text=True,
        timeout=HANG_CATCHER,
    )
    return done.stdout.strip()


def _commit_all(directory: Path) -> str:
    """``git init`` + commit everything in ``directory``; returns the commit's sha."""
    _git(directory, "init", "--quiet")
    _git(directory, "add", "--all")
    _git(directory, "-c", "commit.gpgsign=false", "commit", "--quiet", "--message", "fixture")
    return _git(directory, "rev-parse", "HEAD")


def test_manifest_is_valid() -> None:
    from pre_commit.clientlib import load_manifest  # type: ignore[import-untyped]

    hooks = load_manifest(str(REPO / ".pre-commit-hooks.yaml"))
    assert [hook["id"] for hook in hooks] == [HOOK_ID]
    hook = hooks[0]
    assert hook["entry"] == "importpolicy check --staged"
    assert hook["language"] == "python"
    assert hook["pass_filenames"] is False  # a whole-project check: file names mean nothing to it
    assert set(hook["types_or"]) >= {"python", "toml"}


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """``(path, sha)`` of a git repository with this working tree committed (what pre-commit clones)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    listed = _git(REPO, "ls-files", "--cached", "--others", "--exclude-standard", "-z")
    target = tmp_path_factory.mktemp("hook-repo")
    for name in sorted(set(filter(None, listed.split("\0")))):
        source = REPO / name
        if source.is_file():  # tracked files deleted in the working tree are left out
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target, _commit_all(target)


# What pip needs from the package index to install the hook: the build requirements (pyproject.toml)
# and the dependencies (setup.cfg).
INSTALL_NEEDS = ("setuptools>=64", "wheel", "flake8>=7.0")


def package_index_problem(env: dict[str, str] | None = None) -> str | None:
    """Why pip cannot get what the hook's install needs (from the index, or the configured
    find-links), or None when it can: ``pip download`` of :data:`INSTALL_NEEDS`, without retries."""
    with tempfile.TemporaryDirectory() as directory:
        try:
            done = subprocess.run(
                [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                 "--retries", "0", "--timeout", "15", "--dest", directory, *INSTALL_NEEDS],
                env=env, capture_output=True, text=True, timeout=HANG_CATCHER,
            )
        except subprocess.TimeoutExpired:
            return "the package index cannot be reached (pip download timed out)"
    if done.returncode == 0:
        return None
    last = next((line.strip() for line in reversed(done.stderr.splitlines()) if line.strip()), "")
    return f"the package index cannot be reached (pip download {' '.join(INSTALL_NEEDS)}: {last})"


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One pre-commit cache for the module: the hook's virtualenv is built once. pip builds it from the
    package index: the tests that need it skip, with the reason, when it cannot be reached."""
    problem = package_index_problem()
    if problem is not None:
        pytest.skip(problem)
    return tmp_path_factory.mktemp("pre-commit-home")


def test_an_unreachable_index_is_a_reason_to_skip(tmp_path: Path) -> None:
    """Offline (nothing but an index nobody answers), the probe gives the reason the hook tests skip
    with, at once (no retries)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_INDEX_URL="http://127.0.0.1:9/simple/",
               PIP_NO_CACHE_DIR="1")
    problem = package_index_problem(env)
    assert problem is not None and problem.startswith("the package index cannot be reached (pip download ")


_LIGHT_CLEAN = '''\
"""Needs app.heavy only inside a function."""


def load() -> None:
    import app.heavy
'''
_LIGHT_VIOLATING = "import app.heavy  # a module-level import of a heavy module\n"


def _project(light_source: str) -> dict[str, str]:
    """The files of a project whose light module ``app.ops.light`` has ``light_source``."""
    return {
        "app/__init__.py": "",
        "app/heavy.py": "X = 1\n",
        "app/ops/__init__.py": "",
        "app/ops/light.py": light_source,
        "policy.toml": (
            '[settings]\nsource-roots = ["."]\n\n'
            '[heavy]\n"app.heavy" = "stands in for torch"\n\n'
            '[light."app.ops.light"]\nreason = "imported before the engine worker forks"\n'
        ),
    }


def _run_hook(
    root: Path, files: str | dict[str, str], hook_repo: tuple[Path, str], home: Path,
    hook_options: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Make a project repository at ``root`` with ``files`` (or the light module source of
    :func:`_project`), and run ``pre-commit run --all-files`` there with the hook from
    ``hook_repo``, configured by ``hook_options`` (the hook's keys in the config: ``args``,
    ``verbose``)."""
    files = _project(files) if isinstance(files, str) else files
    options = "".join(f"    {key}: {value}\n" for key, value in (hook_options or {}).items())
    files = {
        **files,
        ".gitignore": ".importpolicy_cache/\n.venv/\n",
        ".pre-commit-config.yaml": (
            f"repos:\n- repo: {hook_repo[0].as_posix()}\n  rev: {hook_repo[1]}\n"
            f"  hooks:\n  - id: {HOOK_ID}\n{options}"
        ),
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    _commit_all(root)
    env = {
        **_GIT_ENV,
        "PRE_COMMIT_HOME": str(home),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_INPUT": "1",
    }
    env.pop("GITHUB_WORKSPACE", None)
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--all-files", "--color", "never"],
        cwd=root, env=env, capture_output=True, text=True, timeout=HANG_CATCHER,
    )


@pytest.mark.slow
def test_hook_fails_on_a_violation(
    tmp_path: Path, hook_repo: tuple[Path, str], pre_commit_home: Path
) -> None:
    done = _run_hook(tmp_path, _LIGHT_VIOLATING, hook_repo, pre_commit_home)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert f"- hook id: {HOOK_ID}" in output
    assert "- exit code: 1" in output
    assert (
        "app/ops/light.py:1:1: IPL001 light module app.ops.light imports app.heavy at import time "
        "(stands in for torch)"
    ) in output
    # pip installed the package (not editable) into the hook's virtualenv: its data files came along,
    # flake8 with it (a dependency: the documented `flake8` step works after `pip install`), and the
    # license.
    assert list(pre_commit_home.glob("*/py_env-*/lib*/python*/site-packages/flake8_importpolicy/"
                                     "schema/policy.schema.json")), "the schema is not in the wheel"
    assert list(pre_commit_home.glob("*/py_env-*/bin/flake8")), "flake8 was not installed with it"
    assert list(pre_commit_home.glob("*/py_env-*/lib*/python*/site-packages/flake8_importpolicy-*.dist-info/"
                                     "**/LICENSE")), "the license is not in the wheel"


@pytest.mark.slow
def test_hook_passes_a_clean_tree(
    tmp_path: Path, hook_repo: tuple[Path, str], pre_commit_home: Path
) -> None:
    done = _run_hook(tmp_path, _LIGHT_CLEAN, hook_repo, pre_commit_home)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "importpolicy check" in output and "Passed" in output


@pytest.mark.slow
def test_a_real_git_commit_is_checked_as_staged(
    tmp_path: Path, hook_repo: tuple[Path, str], pre_commit_home: Path
) -> None:
    """``pre-commit install``, then ``git commit``: an untracked module the light module would import
    (``app/fast_impl.py``, importing the heavy module) once blocked a clean commit; the hook checks
    what is being committed, so that commit passes, and committing that module fails."""
    light = "try:\n    import app.fast_impl\nexcept ImportError:\n    pass\n"
    assert _run_hook(tmp_path, light, hook_repo, pre_commit_home).returncode == 0
    env = {**_GIT_ENV, "PRE_COMMIT_HOME": str(pre_commit_home), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("GITHUB_WORKSPACE", None)
    subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=tmp_path, env=env, check=True,
                   capture_output=True, text=True, timeout=HANG_CATCHER)
    (tmp_path / "app" / "fast_impl.py").write_text("import app.heavy\n")  # untracked
    (tmp_path / "app" / "ops" / "light.py").write_text(light + "# touched\n")

    def commit(*paths: str) -> subprocess.CompletedProcess[str]:
        subprocess.run(["git", "add", *paths], cwd=tmp_path, env=env, check=True, timeout=HANG_CATCHER)
        return subprocess.run(["git", "-c", "commit.gpgsign=false", "commit", "-m", "change"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=HANG_CATCHER)

    done = commit("app/ops/light.py")
    assert done.returncode == 0, done.stdout + done.stderr
    output = done.stdout + done.stderr  # git shows the hook's output on stderr
    assert "importpolicy check" in output and "Passed" in output, output
    done = commit("app/fast_impl.py")
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "IPL001 light module app.ops.light imports app.heavy at import time" in output, output


_RICH_POLICY = """\
[heavy]
"pygments" = "highlighting: slow to import"

[light."app.light"]
reason = "the command must start fast"
"""


@pytest.mark.slow
@pytest.mark.parametrize("how", ["hook's own venv", "--unresolved error", "settings.interpreter",
                                 "--interpreter"])
def test_the_hook_sees_the_projects_packages_only_when_pointed_at_its_interpreter(
    tmp_path: Path, hook_repo: tuple[Path, str], pre_commit_home: Path, how: str
) -> None:
    """``app.light -> rich.syntax -> pygments``, ``rich`` installed in the project's ``.venv`` (not
    tracked) and not in the hook's virtualenv. As documented (docs/ecosystem.md): run from its own
    virtualenv, the hook reports ``rich`` as IPL006 ``not-installed`` naming that interpreter (a
    pass, whose output pre-commit shows with ``verbose: true`` only; ``--unresolved error`` makes it
    a failure); pointed at the project's interpreter by ``[settings] interpreter`` or ``args:
    [--interpreter, ...]``, it finds the chain, though it checks a copy of the git index, which has
    no ``.venv``."""
    make_venv(tmp_path / ".venv", {
        "rich/__init__.py": "",
        "rich/syntax.py": "import pygments\n",
        "pygments/__init__.py": "",
    })
    policy = _RICH_POLICY
    if how == "settings.interpreter":
        policy = '[settings]\ninterpreter = ".venv/bin/python"\n\n' + policy
    hook_options = {"hook's own venv": {"verbose": "true"},
                    "--unresolved error": {"args": "[--unresolved, error]"},
                    "--interpreter": {"args": "[--interpreter, .venv/bin/python]"}}.get(how, {})
    files = {"app/__init__.py": "", "app/light.py": "import rich.syntax\n", "policy.toml": policy}
    done = _run_hook(tmp_path, files, hook_repo, pre_commit_home, hook_options)
    output = done.stdout + done.stderr
    if how in ("settings.interpreter", "--interpreter"):
        assert done.returncode == 1, output
        assert ("app/light.py:1:1: IPL001 light module app.light imports pygments at import time "
                "(highlighting: slow to import)\n    app/light.py:1: app.light -> rich.syntax "
                "(import)\n") in output, output
        assert "/.venv/lib/" in output and "rich.syntax -> pygments (import)" in output, output
        assert "not-installed" not in output, output
        return
    [hook_python] = pre_commit_home.glob("*/py_env-*/bin/python")
    assert ("app/light.py:1:1: IPL006 light module app.light runs import-time code that cannot be "
            f"resolved: not-installed rich (not found by {hook_python})") in output, output
    assert "IPL001" not in output, output
    assert done.returncode == (1 if how == "--unresolved error" else 0), output
