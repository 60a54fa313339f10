"""What besides its path decides what an interpreter reports: one answer for the query and every cache.

A fresh ``python -c "import x"`` finds modules on a ``sys.path`` that its path alone does not decide
(docs/design.md, "Caches"): a venv's interpreter is a link to one base interpreter, and what makes it
that venv is the path it is started by (``pyvenv.cfg`` beside it); the user site depends on
``PYTHONUSERBASE``, ``PYTHONNOUSERSITE``, ``HOME`` and the ``-s`` flag; ``PYTHONPATH`` (its
relative entries against the working directory), ``PYTHONHOME``, ``PYTHONPLATLIBDIR`` add or move
entries; ``-S``, ``-E`` and ``-I`` change them all, and ``SETUPTOOLS_USE_DISTUTILS`` decides whether
setuptools' ``.pth`` installs its meta-path finder. The interpreter query
(:mod:`flake8_importpolicy.analysis.resolve`) runs with this environment and, for the interpreter
running us, its flags; :func:`interpreter_key` is what the query's memo, the cached interpreter facts
and the answer indexes are keyed by. Standard library only and cheap to import: the warm paths use it.
"""

from __future__ import annotations

import os
import sys
from typing import Final

__all__ = [
    "QUERY_VARIABLES",
    "interpreter_key",
    "leave_working_directory",
    "locate_interpreter",
    "query_environment",
    "running_flags",
]

QUERY_VARIABLES: Final = (
    "PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONNOUSERSITE", "PYTHONPLATLIBDIR",
    "PYTHONSAFEPATH", "PYTHONEXECUTABLE", "HOME", "APPDATA", "SETUPTOOLS_USE_DISTUTILS",
)
"""The environment variables that change an interpreter's ``sys.path``, start-up modules or
meta-path finders (Python's ``site`` module and command line documentation; setuptools'
``distutils-precedence.pth``). Others (``PYTHONHASHSEED``, which tox sets anew on each run) do not,
and are left out of the keys so that they cost no cache miss."""


_PACKAGE_PARENT: Final = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def query_environment() -> dict[str, str]:
    """This process's environment, with relative ``PYTHONPATH`` entries made absolute: the query runs
    in an empty directory, where they would name nothing, and the interpreter a user starts here
    resolves them against here."""
    env = dict(os.environ)
    entries = env.get("PYTHONPATH", "")
    if entries:
        try:
            env["PYTHONPATH"] = os.pathsep.join(
                os.path.abspath(entry or os.curdir) for entry in entries.split(os.pathsep)
            )
        except OSError:  # no working directory: relative entries name nothing anywhere
            pass
    return env


def running_flags() -> tuple[str, ...]:
    """The command-line flags of the interpreter running us that change its ``sys.path`` or start-up
    modules (``-I``, else ``-E``, ``-s``, ``-P``; ``-S``; ``-X frozen_modules``): the query of "the
    interpreter running us" starts it with them, as ``python -s -m flake8_importpolicy`` means."""
    flags = sys.flags
    found: list[str] = []
    if flags.isolated:
        found.append("-I")
    else:
        found.extend(flag for flag, on in (
            ("-E", flags.ignore_environment), ("-s", flags.no_user_site),
            ("-P", getattr(flags, "safe_path", False)),
        ) if on)
    if flags.no_site:
        found.append("-S")
    frozen = getattr(sys, "_xoptions", {}).get("frozen_modules")
    if isinstance(frozen, str):
        found.extend(("-X", f"frozen_modules={frozen}"))
    return tuple(found)


def locate_interpreter(executable: str) -> str:
    """The interpreter file ``executable`` starts: a command name (no directory) as ``PATH`` finds it,
    a path made absolute; symbolic links are kept (a venv's ``bin/python`` is a link to the base
    interpreter, and the link is what makes it that venv's)."""
    if os.sep not in executable and not (os.altsep and os.altsep in executable):
        import shutil  # only for a command name: shutil's own imports cost a warm path

        executable = shutil.which(executable) or executable
    try:
        return os.path.abspath(executable)
    except OSError:  # no working directory
        return executable


def interpreter_key(executable: str | None = None) -> tuple[str, ...]:
    """What decides the query's answer of ``executable`` (None: the interpreter running us) besides
    the files it reads, which the caches stamp: the interpreter as located, the flags it is started
    with, and each of :data:`QUERY_VARIABLES` as the query sees it (``=`` for an unset one)."""
    running = executable is None or executable == sys.executable
    located = locate_interpreter(executable or sys.executable)
    env = query_environment()
    return (
        located, " ".join(running_flags()) if running else "",
        *(f"{name}={env[name]}" if name in env else f"{name}=" for name in QUERY_VARIABLES),
    )


def leave_working_directory() -> None:
    """Move the working directory to the end of ``sys.path`` where ``python -m`` put it first
    (``python -m flake8_importpolicy`` or ``python -m mypy`` in a project, a worker of ``mypy -n
    N``), and forget the standard library modules already imported from it: a project's
    ``json.py`` or ``tomllib.py`` would otherwise run in place of the standard library's when this
    package imports it (a host keeps what it bound; what is imported from then on is the real
    module). Modules only the working directory has (a project's own mypy plugin) are still found
    there. Nothing changes when this package itself was imported from it (a source checkout)."""
    try:
        here = os.getcwd()
    except OSError:  # no working directory: nothing to move
        return
    if sys.flags.safe_path or sys.path[:1] != [here] or here == _PACKAGE_PARENT:
        return
    sys.path.append(sys.path.pop(0))
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if name not in sys.stdlib_module_names or not isinstance(path, str):
            continue
        directory = os.path.dirname(path)
        if directory == here or (os.path.basename(path) == "__init__.py"
                                 and os.path.dirname(directory) == here):
            del sys.modules[name]
