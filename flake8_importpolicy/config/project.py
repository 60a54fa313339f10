"""What a project declares about itself: its console scripts and entry points, read from
``pyproject.toml`` (``[project.scripts]``, ``[project.gui-scripts]``, ``[project.entry-points.*]``),
``setup.cfg`` (``[options.entry_points]``), ``setup.py`` (the literal ``entry_points=`` of its
``setup(...)`` call, read with :mod:`ast`, never run) and, for an unpacked wheel,
``*.dist-info/entry_points.txt``.
``importpolicy suggest`` proposes the modules they name as light. Nothing is imported.
"""

from __future__ import annotations

import ast
import configparser
import os
import shutil
import sys
import tomllib
from collections.abc import Iterable
from pathlib import Path

from flake8_importpolicy.model.reading import read_regular_file

__all__ = ["find_entry_points", "find_project_interpreter"]


def find_entry_points(directories: Iterable[Path]) -> dict[str, tuple[str, ...]]:
    """The modules that console scripts and entry points declared in ``directories`` name, each
    with the declarations (``group:name``) that name it, sorted. A file that cannot be read or
    parsed is skipped (suggest works without it).
    """
    found: dict[str, set[str]] = {}

    def add(group: str, name: str, value: object) -> None:
        if not isinstance(value, str):
            return
        module = value.partition(":")[0].strip().split("[")[0].strip()
        if module and all(part.isidentifier() for part in module.split(".")):
            found.setdefault(module, set()).add(f"{group}:{name.strip()}")

    seen: set[Path] = set()
    for directory in directories:
        directory = directory.resolve()
        if directory in seen:
            continue
        seen.add(directory)
        pyproject = _read_toml(directory / "pyproject.toml")
        project = pyproject.get("project")
        if isinstance(project, dict):
            for table, group in (("scripts", "console_scripts"), ("gui-scripts", "gui_scripts")):
                scripts = project.get(table)
                if isinstance(scripts, dict):
                    for name, value in scripts.items():
                        add(group, name, value)
            groups = project.get("entry-points")
            if isinstance(groups, dict):
                for group, entries in groups.items():
                    if isinstance(entries, dict):
                        for name, value in entries.items():
                            add(group, name, value)
        setup = _read_ini(directory / "setup.cfg")
        if setup is not None and setup.has_section("options.entry_points"):
            for group, text in setup.items("options.entry_points", raw=True):
                for line in text.splitlines():
                    name, equals, value = line.partition("=")
                    if equals:
                        add(group, name, value)
        for group, name, value in _setup_py_entry_points(directory / "setup.py"):
            add(group, name, value)
        for info in sorted(directory.glob("*.dist-info/entry_points.txt")):
            points = _read_ini(info)
            if points is None:
                continue
            for group in points.sections():
                for name, value in points.items(group, raw=True):
                    add(group, name, value)
    return {module: tuple(sorted(names)) for module, names in sorted(found.items())}


def find_project_interpreter(root: Path, named: str | None = None) -> Path | None:
    """The interpreter the project runs on, for a draft policy's ``interpreter``: ``named``
    (``--interpreter``; a command name is looked up on ``PATH``), else ``.venv`` or ``venv`` in
    ``root`` (the first whose ``bin/python``
    or ``Scripts/python.exe`` exists), else the active virtual environment (``VIRTUAL_ENV``) unless
    it is the one running importpolicy (the default anyway); None when none is found. Absolute,
    not resolved (a venv's python is a symbolic link to the base interpreter, whose ``sys.path``
    lacks the venv's packages)."""
    if named:
        if os.sep in named or "/" in named:
            return Path(named).absolute()
        found = shutil.which(named)  # a command name, as settings.interpreter takes it
        return Path(found).absolute() if found else None
    candidates = [root / name for name in (".venv", "venv")]
    active = os.environ.get("VIRTUAL_ENV")
    if active and Path(active).absolute() != Path(sys.prefix).absolute():
        candidates.append(Path(active))
    for venv in candidates:
        for python in (venv / "bin" / "python", venv / "Scripts" / "python.exe"):
            if python.is_file():
                return python.absolute()
    return None


def _setup_py_entry_points(path: Path) -> list[tuple[str, str, str]]:
    """``(group, name, value)`` of the ``entry_points=`` keyword of a ``setup(...)`` call in
    ``setup.py``: a dict literal, or a module-level name assigned one, whose values are a string or
    a list/tuple of ``"name = module:function"`` strings. Anything computed is skipped: the file is
    parsed, never run."""
    try:
        tree = ast.parse(read_regular_file(path)[1])
    except (OSError, SyntaxError, ValueError, RecursionError):
        return []
    assigned: dict[str, ast.expr] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    assigned[target.id] = statement.value
    found: list[tuple[str, str, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for keyword in node.keywords:
            value = keyword.value
            if keyword.arg != "entry_points":
                continue
            if isinstance(value, ast.Name):
                value = assigned.get(value.id, value)
            if not isinstance(value, ast.Dict):
                continue
            for key, entries in zip(value.keys, value.values):
                if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                    continue
                lines = entries.elts if isinstance(entries, (ast.List, ast.Tuple)) else [entries]
                for line in lines:
                    if isinstance(line, ast.Constant) and isinstance(line.value, str):
                        name, equals, reference = line.value.partition("=")
                        if equals:
                            found.append((key.value, name, reference))
    return found


def _read_toml(path: Path) -> dict[str, object]:
    try:
        return tomllib.loads(read_regular_file(path)[1].decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return {}


class _CaseKeepingParser(configparser.ConfigParser):
    """Option names as written (``ConfigParser`` lowercases them): entry point names are
    case-sensitive. Overriding ``optionxform`` is configparser's documented way."""

    def optionxform(self, optionstr: str) -> str:
        return optionstr


def _read_ini(path: Path) -> configparser.ConfigParser | None:
    parser = _CaseKeepingParser(interpolation=None, delimiters=("=",))
    try:
        text = read_regular_file(path)[1].decode("utf-8")
        parser.read_string(text, source=str(path))
    except (OSError, UnicodeDecodeError, configparser.Error):
        return None
    return parser
