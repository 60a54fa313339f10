"""The distribution as the package index and its users see it (issue 31 item 5): messages and help
name the docs by address (an installed package has no docs/ tree), the README's links work on the
package index page, the metadata says what the package is, and the sdist carries what its tests need.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from helpers import DOCS_URL

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
