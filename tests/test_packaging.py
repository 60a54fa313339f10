"""The distribution as the package index and its users see it (issue 31 item 5): messages and help
name the docs by address (an installed package has no docs/ tree), the README's links work on the
package index page, the metadata says what the package is, and the sdist carries what its tests need.
"""

from __future__ import annotations

import ast
import email.message
import os
import email.parser
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from helpers import DOCS_URL, HANG_CATCHER, find_python

from flake8_importpolicy import REPOSITORY_URL, docs_url

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "flake8_importpolicy"
_DOCS_PATH = re.compile(r"(?<![\w/])docs/[\w.-]+\.md")
_GENERATED = {PACKAGE / "codes_help.py"}  # docs/codes.md's own text (tools/regenerate.py)


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string constants that stand alone as statements: the docstrings of modules,
    classes, functions and attributes, which are read in the source and never printed."""
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}


def _texts(path: Path) -> list[tuple[int, str]]:
    """The string constants of ``path`` (f-string parts included) that are no docstring."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _docstrings(tree)
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip]


def test_docs_url_is_the_repositorys_docs() -> None:
    assert REPOSITORY_URL == "https://github.com/flake8-importpolicy/flake8-importpolicy"
    assert docs_url("policy.md") == f"{DOCS_URL}/policy.md"
    assert docs_url("policy.md", "bounds") == f"{DOCS_URL}/policy.md#bounds"


def test_no_message_sends_the_user_to_a_docs_path() -> None:
    """Every text the package can print (messages, help, generated comments, the JSON Schema's
    description) names a page of the docs by its address, never by a path of the repository's tree
    the user of a wheel does not have. Docstrings are for readers of the source and keep the path."""
    found = [f"{path.relative_to(REPO)}:{line}: {text!r}"
             for path in sorted(PACKAGE.rglob("*.py")) if path not in _GENERATED
             for line, text in _texts(path) if _DOCS_PATH.search(text)]
    schema = (PACKAGE / "schema" / "policy.schema.json").read_text(encoding="utf-8")
    found += [f"policy.schema.json: {match}" for match in _DOCS_PATH.findall(schema)]
    assert not found, "\n".join(found)


SUPPORTED_PYTHONS = ("3.11", "3.12", "3.13")
"""The versions the suite runs under (README, "Supported Python versions"): the classifiers say them."""

# What the sdist's own tests prove once it is installed in a fresh venv, run from the unpacked tree:
# the policy, the engine on every fixture tree with the interpreter as oracle, the docs' links and
# code texts, the documented examples. A sample (the whole suite takes minutes), read from the sdist.
SDIST_TESTS = ("tests/test_policy.py", "tests/test_fixtures.py", "tests/test_docs_links.py",
               "tests/test_codes.py", "tests/test_examples.py",
               "tests/test_packaging.py::test_the_tests_run_against_the_installed_package")


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The sdist and the wheel, as ``python -m build`` makes them (the wheel from the sdist)."""
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(REPO)],
                          capture_output=True, text=True, timeout=HANG_CATCHER)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (sdist,), (wheel,) = out.glob("*.tar.gz"), out.glob("*.whl")
    return sdist, wheel


def _wheel_metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        return email.parser.BytesParser().parsebytes(archive.read(name))


@pytest.mark.slow
def test_the_metadata_says_what_the_package_is(dists: tuple[Path, Path]) -> None:
    metadata = _wheel_metadata(dists[1])
    assert metadata["License-Expression"] == "MIT"
    assert metadata.get_all("License-File") == ["LICENSE"]
    assert metadata["Requires-Python"] == f">={SUPPORTED_PYTHONS[0]}"
    classifiers = set(metadata.get_all("Classifier") or [])
    assert {c for c in classifiers if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)} == {
        f"Programming Language :: Python :: {version}" for version in SUPPORTED_PYTHONS}
    assert {"Framework :: Flake8", "Framework :: Pytest", "Typing :: Typed",
            "Programming Language :: Python :: 3 :: Only"} <= classifiers
    assert not any(c.startswith("License ::") for c in classifiers)  # the expression replaces them
    urls = dict(line.split(", ", 1) for line in metadata.get_all("Project-URL") or [])
    assert urls == {"Homepage": REPOSITORY_URL, "Documentation": f"{DOCS_URL}/",
                    "Source": REPOSITORY_URL, "Issues": f"{REPOSITORY_URL}/issues"}


@pytest.mark.slow
def test_twine_accepts_both(dists: tuple[Path, Path]) -> None:
    done = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *map(str, dists)],
                          capture_output=True, text=True, timeout=HANG_CATCHER)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_the_sdist_installs_and_its_tests_pass(dists: tuple[Path, Path], tmp_path: Path) -> None:
    """``pip download --no-binary`` gives the sdist: installed (not editable) in a fresh venv, its own
    tests pass from its unpacked tree, against the installed package rather than the tree's copy."""
    sdist = dists[0]
    with tarfile.open(sdist) as archive:
        archive.extractall(tmp_path, filter="data")
    (tree,) = (path for path in tmp_path.iterdir() if path.is_dir())
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=HANG_CATCHER)
    python = venv / "bin" / "python"
    install = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                              str(sdist), "pytest>=8", "hypothesis>=6"],
                             capture_output=True, text=True, timeout=HANG_CATCHER)
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    # the pytest script, not python -m pytest: the unpacked tree is not on sys.path
    done = subprocess.run([str(venv / "bin" / "pytest"), "-q", "-p", "no:cacheprovider", *SDIST_TESTS],
                          cwd=tree, capture_output=True, text=True, timeout=HANG_CATCHER,
                          env={**os.environ, _INSTALLED_IN: str(venv)})
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-3000:]


_INSTALLED_IN = "IMPORTPOLICY_TEST_INSTALLED_IN"


def test_the_tests_run_against_the_installed_package() -> None:
    """Under :func:`test_the_sdist_installs_and_its_tests_pass`, the package the tests import is the
    one installed in its venv, not the unpacked tree's copy; elsewhere, nothing to check."""
    venv = os.environ.get(_INSTALLED_IN)
    if venv is None:
        pytest.skip("only inside the sdist's own test run")
    import flake8_importpolicy

    assert flake8_importpolicy.__file__.startswith(venv), flake8_importpolicy.__file__


@pytest.mark.slow
@pytest.mark.parametrize("version", SUPPORTED_PYTHONS)
def test_each_supported_python_runs_the_installed_wheel(
    dists: tuple[Path, Path], tmp_path: Path, version: str
) -> None:
    """The statement of supported versions, tested: under each, the wheel installs (not editable)
    and ``importpolicy check`` on the documented example reports what the docs say (one IPL001,
    exit 1), ``importpolicy -V`` answers, and flake8 loads the plugin. Python 3.14 is supported
    statically: ``--target-version 3.14`` analyses its rules (tests/test_import_time_rules.py)."""
    python = find_python(version)
    if python is None:
        pytest.skip(f"Python {version} is not installed (neither on PATH nor kept by pyenv)")
    venv = tmp_path / "venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True, timeout=HANG_CATCHER)
    install = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                              "--disable-pip-version-check", str(dists[1])],
                             capture_output=True, text=True, timeout=HANG_CATCHER)
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    example = REPO / "examples" / "cuda_fork"
    done = subprocess.run([str(venv / "bin" / "importpolicy"), "check", "--no-cache",
                           "--policy", str(example / "policy.toml")],
                          cwd=example, capture_output=True, text=True, timeout=HANG_CATCHER)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.count(" IPL001 ") == 1, done.stdout
    version_line = subprocess.run([str(venv / "bin" / "importpolicy"), "-V"],
                                  capture_output=True, text=True, timeout=HANG_CATCHER)
    assert version_line.stdout.startswith("importpolicy "), version_line
    plugins = subprocess.run([str(venv / "bin" / "flake8"), "--version"],
                             capture_output=True, text=True, timeout=HANG_CATCHER)
    assert "flake8-importpolicy" in plugins.stdout, plugins.stdout
