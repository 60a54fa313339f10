"""Each policy key and each code's text is written once; the rest is made from it.

- The keys of ``policy.toml`` are declared in ``flake8_importpolicy/config/keys.py`` (name, type,
  default, doc and check). The validation walks that declaration; the JSON Schema
  (tests/test_schema.py) and docs/policy.md's key tables are made from it.
- Each code's help is its section of docs/codes.md; ``flake8_importpolicy/codes_help.py`` is made
  from it (tests/test_codes.py checks the text).

``python tools/regenerate.py`` writes the made files; these tests fail when one is stale.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from flake8_importpolicy.config.fields import key_part
from flake8_importpolicy.config.keys import IGNORE, LIGHT, POLICY, SETTINGS
from flake8_importpolicy.config.reference import GENERATED_BEGIN, format_key_table, replace_key_tables
from flake8_importpolicy.model.policy import LightRule, Settings

REPO = Path(__file__).resolve().parents[1]
TABLES = [POLICY, SETTINGS, LIGHT, IGNORE]


def _regenerate() -> ModuleType:
    spec = importlib.util.spec_from_file_location("regenerate", REPO / "tools" / "regenerate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_each_settings_key_is_a_settings_attribute() -> None:
    """``[settings]`` is built as ``Settings(**values)``: one attribute per declared key, same order,
    and the roots as written, which the ``source-roots`` check gives with the resolved ones."""
    fields = [f.name for f in dataclasses.fields(Settings)]
    assert [key.attr for key in SETTINGS.keys] == [f for f in fields if f != "source_roots_as_written"]
    assert "source_roots_as_written" in fields


def test_each_light_key_is_a_light_rule_attribute() -> None:
    """A light rule is its pattern, the lines of its entries, its source and one attribute per key."""
    made_by_the_loader = {"pattern", "entries", "source"}
    fields = [f.name for f in dataclasses.fields(LightRule) if f.name not in made_by_the_loader]
    assert sorted(key.attr for key in LIGHT.keys) == sorted(fields)


@pytest.mark.parametrize("table", TABLES, ids=[t.name for t in TABLES])
def test_every_declared_key_is_a_bare_key_with_a_doc(table: object) -> None:
    """Key paths of declared keys are written without quotes (the walk relies on it), and each key
    says what it is and what its value is."""
    for key in table.keys:  # type: ignore[attr-defined]
        assert key_part(key.name) == key.name
        assert key.doc and key.type_doc, key.name
        assert not key.doc.endswith("."), f"{key.name}: a table cell, not a sentence"


def test_docs_policy_md_key_tables_are_made_from_the_declaration() -> None:
    text = (REPO / "docs" / "policy.md").read_text(encoding="utf-8")
    for table in TABLES:
        begin = GENERATED_BEGIN.format(table=table.name)
        assert text.count(begin) == 1, f"docs/policy.md has no generated table of {table.name}"
        assert f"{begin}\n{format_key_table(table)}\n" in text
    assert replace_key_tables(text) == text


def test_the_generated_files_are_current() -> None:
    done = subprocess.run([sys.executable, str(REPO / "tools" / "regenerate.py"), "--check"],
                          capture_output=True, text=True)
    assert (done.returncode, done.stderr) == (0, "")


def test_regenerate_names_and_rewrites_a_stale_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    regenerate = _regenerate()
    for name in ("SCHEMA", "POLICY_DOC", "CODES_HELP"):
        copy = tmp_path / getattr(regenerate, name).name
        shutil.copy(getattr(regenerate, name), copy)
        monkeypatch.setattr(regenerate, name, copy)
    monkeypatch.setattr(regenerate, "REPO", tmp_path)
    stale = tmp_path / "policy.md"
    stale.write_text(stale.read_text(encoding="utf-8").replace("| `call-depth` |", "| `call-dpth` |"),
                     encoding="utf-8")
    assert regenerate.main(["--check"]) == 1
    assert capsys.readouterr().err == "policy.md is stale: run python tools/regenerate.py\n"
    assert regenerate.main([]) == 0
    assert capsys.readouterr().out == "wrote policy.md\n"
    assert regenerate.main(["--check"]) == 0


def _classes(path: Path) -> list[tuple[str, int, int]]:
    """(name, lines, instance attributes) of each class in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ClassDef):
            targets = [target for sub in ast.walk(node) if isinstance(sub, ast.Assign)
                       for target in sub.targets]
            targets += [sub.target for sub in ast.walk(node) if isinstance(sub, ast.AnnAssign)]
            attributes = {target.attr for target in targets if isinstance(target, ast.Attribute)
                          and isinstance(target.value, ast.Name) and target.value.id == "self"}
            attributes |= {sub.target.id for sub in node.body
                           if isinstance(sub, ast.AnnAssign) and isinstance(sub.target, ast.Name)}
            assert node.end_lineno is not None
            found.append((node.name, node.end_lineno - node.lineno + 1, len(attributes)))
    return found


@pytest.mark.parametrize(
    "path",
    [*sorted((REPO / "flake8_importpolicy" / "config").glob("*.py")),
     REPO / "flake8_importpolicy" / "codes.py"],
    ids=lambda path: path.name,
)
def test_no_class_of_the_config_or_the_codes_is_over_400_lines_or_15_attributes(path: Path) -> None:
    for name, lines, attributes in _classes(path):
        assert lines <= 400 and attributes <= 15, \
            f"{path.name}: {name} ({lines} lines, {attributes} attributes)"


def test_codes_py_holds_no_help_text() -> None:
    """The help is docs/codes.md's, made into codes_help.py: codes.py keeps no second copy."""
    source = (REPO / "flake8_importpolicy" / "codes.py").read_text(encoding="utf-8")
    assert not re.search(r"\*\*(What it does|Why it matters|Use instead)\.\*\*", source)
