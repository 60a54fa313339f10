"""Resolution: which file runs for a dotted module name, found by path search alone (no execution).

The search follows the interpreter's order (docs/semantics.md rules 5-7):

1. modules already imported at interpreter start-up never run again (``preloaded``);
2. builtin modules (``sys.builtin_module_names``), then frozen modules (``_imp._frozen_module_names()``,
   most of the start-up stdlib since 3.11) — ``importlib.machinery.BuiltinImporter`` and
   ``FrozenImporter`` come before ``PathFinder`` on ``sys.meta_path``;
3. path entries in order: the policy's first-party source roots (standing in for the script directory
   that ``python -c`` puts first), then the interpreter's ``sys.path``. Within one directory
   (``importlib.machinery.FileFinder.find_spec``) a regular package ``name/__init__.*`` wins over a
   module file, module files are tried in loader order (extension suffixes, ``.py``, ``.pyc``), and a
   directory without ``__init__`` is only a namespace portion (PEP 420) if nothing else matched on the
   whole path. A FIFO, socket or device named ``x.py`` is found but never read (``FileFinder``
   skips it; here it is reported as unanalysable, IPL005, like a dangling symlink).

Nothing here imports the analysed code; ``importlib.util.find_spec`` is never used because it executes
parent packages. The target interpreter is queried once for its ``sys.path`` and module lists.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from flake8_importpolicy.analysis.pyx import PYX_SUFFIX, python_skeleton
from flake8_importpolicy.model.environment import interpreter_key, query_environment, running_flags
from flake8_importpolicy.model.errors import InterpreterError
from flake8_importpolicy.model.facts import SourceRead
from flake8_importpolicy.model.interpreter import (
    InterpreterInfo,
    ModuleKind,
    Origin,
    ResolvedModule,
)
from flake8_importpolicy.model.reading import read_regular_file

__all__ = [
    "QUERY_TIMEOUT",
    "ModuleIndex",
    "kill_process_group",
    "query_interpreter",
    "query_is_running",
    "query_script",
    "query_timeout",
    "read_source",
    "read_source_stamped",
    "remember_interpreter",
    "running_interpreter_without_path",
    "start_interpreter_query",
    "stop_started_queries",
]

# Runs in the target interpreter (any Python >= 3.6); imports only the stdlib, never analysed code.
_QUERY_BODY: Final = """\
import sys
preloaded = sorted(sys.modules)
import json, sysconfig, importlib.machinery
try:
    import _imp
    frozen = sorted(_imp._frozen_module_names())
except Exception:
    frozen = []
paths = sysconfig.get_paths()
answer = {
    "executable": sys.executable,
    "version": list(sys.version_info[:2]),
    "platform": sys.platform,
    "sys_path": sys.path[0 if getattr(sys.flags, "safe_path", False) else 1:],
    "builtin": sorted(sys.builtin_module_names),
    "frozen": frozen,
    "preloaded": preloaded,
    "stdlib_dirs": [paths["stdlib"], paths["platstdlib"]],
    "extension_suffixes": list(importlib.machinery.EXTENSION_SUFFIXES),
    "prefix": sys.prefix,
    "user_site": (
        sys.modules["site"].getusersitepackages()
        if getattr(sys.modules.get("site"), "ENABLE_USER_SITE", False) else None
    ),
    "meta_path": [
        c.__module__ + "." + c.__qualname__
        for c in (f if isinstance(f, type) else type(f) for f in sys.meta_path)
    ],
}
# the installed entry points (metadata files only): 3.10+ select by group (3.10-3.11's dict
# interface is deprecated), 3.8-3.9 give a dict of groups
try:
    import warnings
    from importlib import metadata
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        points = metadata.entry_points()
        if hasattr(points, "select") and hasattr(points, "groups"):
            points = [p for g in sorted(points.groups) for p in points.select(group=g)]
        elif isinstance(points, dict):
            points = [p for g in points.values() for p in g]
    answer["entry_points"] = sorted({(p.group, p.name, p.value) for p in points})
except Exception:
    answer["entry_points"] = []
"""


def query_script(then: str) -> str:
    """The source of the interpreter query for ``python -c``, run in an empty directory: it binds the
    answer to ``answer`` (a JSON-able dict), then runs ``then``.

    :func:`query_interpreter` prints the answer; a helper process of the same interpreter and
    environment (the mypy plugin's) computes it first and hands it to :func:`remember_interpreter`,
    which spares the engine a second interpreter start.
    """
    return _QUERY_BODY + then


_QUERY: Final = query_script("print(json.dumps(answer))\n")

FINDER_REDIRECTS: Final[Mapping[str, Mapping[str, str]]] = {
    # setuptools' distutils-precedence.pth installs it unless SETUPTOOLS_USE_DISTUTILS=stdlib;
    # its find_spec imports setuptools._distutils and returns that module as ``distutils``.
    "_distutils_hack.DistutilsMetaFinder": {"distutils": "setuptools._distutils"},
}
"""Meta-path finders known to answer a top-level name with another module: ``{finder class:
{name: module it returns}}``. Finders are recognised by class, never run (docs/semantics.md rule 7)."""

QUERY_TIMEOUT: Final = 30.0
"""Seconds an interpreter has to answer the query by default (:func:`query_timeout`); a real one
answers in tens of milliseconds."""

_QUERY_CACHE: dict[tuple[str, ...], InterpreterInfo] = {}
_STARTED: dict[
    tuple[str, ...], tuple[subprocess.Popen[str], tempfile.TemporaryDirectory[str]]
] = {}


def _query_key(executable: str | None) -> tuple[str, ...]:
    """What decides a query's answer besides the files it reads
    (:func:`~flake8_importpolicy.model.environment.interpreter_key`)."""
    return interpreter_key(executable)


def _query_command(executable: str | None) -> list[str]:
    """The query's command: the interpreter running us is started with its own flags (``-s``,
    ``-I``...), which change its ``sys.path``; another one as given."""
    exe = executable or sys.executable
    return [exe, *(running_flags() if exe == sys.executable else ()), "-c", _QUERY]


def query_timeout() -> float:
    """Seconds an interpreter has to answer the query: :data:`QUERY_TIMEOUT`, or
    ``IMPORTPOLICY_INTERPRETER_TIMEOUT`` when that is a positive number."""
    try:
        value = float(os.environ.get("IMPORTPOLICY_INTERPRETER_TIMEOUT", ""))
    except ValueError:
        return QUERY_TIMEOUT
    return value if 0 < value < float("inf") else QUERY_TIMEOUT


def _start(command: list[str], cwd: str) -> subprocess.Popen[str]:
    """Start a query in a session of its own, so that it and whatever it starts can be killed."""
    return subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env=query_environment(),
        start_new_session=os.name == "posix",
    )


def _finish(process: subprocess.Popen[str], timeout: float | None) -> tuple[str, str]:
    """The query's output once it has exited.

    Raises:
        subprocess.TimeoutExpired: it did not exit within ``timeout`` seconds: its whole process
            group is killed, and its pipes are closed unread (a process it started in a session of
            its own could keep them open for ever).
    """
    try:
        return process.communicate(timeout=timeout)
    except BaseException:
        _kill_group(process)
        raise


def kill_process_group(process: subprocess.Popen[Any]) -> None:
    """Kill ``process`` and, on POSIX, every process of its process group (a process started with
    ``start_new_session`` leads one: what it started goes too, once it has exited as well)."""
    if os.name == "posix":
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        process.kill()
    except ProcessLookupError:
        pass


def _kill_group(process: subprocess.Popen[str]) -> None:
    kill_process_group(process)
    for pipe in (process.stdout, process.stderr):
        if pipe is not None:
            pipe.close()
    process.wait()


def start_interpreter_query(executable: str | None = None) -> None:
    """Start :func:`query_interpreter`'s subprocess now and return at once; the next
    ``query_interpreter(executable)`` collects its answer.

    A command line calls this first, so the interpreter starts while the engine is imported. Errors
    are left for :func:`query_interpreter` to report (it starts the process again).
    """
    key = _query_key(executable)
    if key in _QUERY_CACHE or key in _STARTED:
        return
    try:
        empty = tempfile.TemporaryDirectory(prefix="importpolicy-")
    except OSError:  # no writable temporary directory: query_interpreter says so, with exit 2
        return
    try:
        process = _start(_query_command(executable), empty.name)
    except (OSError, subprocess.SubprocessError):
        empty.cleanup()
        return
    _STARTED[key] = (process, empty)


def remember_interpreter(answer: dict[str, object]) -> None:
    """Take ``answer``, bound by :func:`query_script` at the start of this very process, as the answer
    of the interpreter running us (:func:`query_interpreter` with no executable); a malformed answer
    is ignored (the interpreter is then queried as usual)."""
    try:
        info = InterpreterInfo.from_json(answer)
    except (KeyError, TypeError, ValueError):
        return
    _QUERY_CACHE.setdefault(_query_key(None), info)


def query_is_running(executable: str | None = None) -> bool:
    """Whether :func:`start_interpreter_query` started a query of ``executable`` that nobody
    collected yet (its answer is still coming)."""
    return _query_key(executable) in _STARTED


def running_interpreter_without_path() -> InterpreterInfo:
    """What this process knows of its own interpreter without a query: version, platform, builtin
    and frozen modules, extension suffixes; no ``sys.path``, no start-up modules. Path search with it
    finds first-party modules only (the source roots come first anyway)."""
    import _imp
    import importlib.machinery

    return InterpreterInfo(
        executable=sys.executable,
        version=(sys.version_info[0], sys.version_info[1]),
        platform=sys.platform,
        sys_path=(),
        builtin=frozenset(sys.builtin_module_names),
        frozen=frozenset(getattr(_imp, "_frozen_module_names", lambda: ())()),
        preloaded=frozenset(),
        stdlib_dirs=(),
        extension_suffixes=tuple(importlib.machinery.EXTENSION_SUFFIXES),
    )


def stop_started_queries() -> None:
    """Stop the queries :func:`start_interpreter_query` started that no :func:`query_interpreter`
    collected (a command that failed before it needed the interpreter): no process is left
    behind, and a later query in this process starts afresh, in the environment of its own time."""
    while _STARTED:
        _, (process, empty) = _STARTED.popitem()
        try:
            _kill_group(process)
        except (OSError, subprocess.SubprocessError):
            pass
        finally:
            empty.cleanup()


def query_interpreter(executable: str | None = None) -> InterpreterInfo:
    """Ask an interpreter for its module search path and start-up modules.

    Runs ``executable -c <stdlib-only script>`` (a fresh process, with the environment of this one, so
    ``PYTHONPATH`` and ``.pth`` files count as they would for ``python -c "import x"``; the
    interpreter running us gets its own flags, such as ``-s``). The answer is cached for the life of
    this process per :func:`~flake8_importpolicy.model.environment.interpreter_key`.

    Args:
        executable: path of the interpreter; ``None`` means the one running this code. It runs in
            an empty temporary directory, so no project module can shadow the query's imports.

    Raises:
        InterpreterError: if the interpreter cannot be started, does not answer within
            :func:`query_timeout` seconds (it is killed with every process it started), or answers
            nonsense.
    """
    key = _query_key(executable)
    exe = executable or sys.executable
    cached = _QUERY_CACHE.get(key)
    if cached is not None:
        return cached
    timeout = query_timeout()
    try:
        completed = _collect_started(key, timeout)
        if completed is None:
            # An empty working directory: the query must not import a project's json.py or sys.py.
            with tempfile.TemporaryDirectory(prefix="importpolicy-") as empty:
                process = _start(_query_command(executable), empty)
                stdout, stderr = _finish(process, timeout)
                completed = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    except subprocess.TimeoutExpired:
        raise InterpreterError(
            f"interpreter {exe} did not answer the query of its sys.path within {timeout:g} s "
            "(IMPORTPOLICY_INTERPRETER_TIMEOUT sets the limit); is it a Python interpreter that "
            "starts?"
        ) from None
    except (OSError, subprocess.SubprocessError) as exc:
        raise InterpreterError(f"cannot run interpreter {exe}: {exc}") from exc
    if completed.returncode != 0:
        tail = completed.stderr.strip().splitlines()[-1:] or ["no output"]
        raise InterpreterError(
            f"interpreter {exe} failed to report its sys.path (exit {completed.returncode}): {tail[0]}"
        )
    try:
        info = InterpreterInfo.from_json(json.loads(completed.stdout.strip().splitlines()[-1]))
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise InterpreterError(f"interpreter {exe} gave an unreadable answer: {exc}") from exc
    _QUERY_CACHE[key] = info
    return info


def _collect_started(
    key: tuple[str, ...], timeout: float
) -> subprocess.CompletedProcess[str] | None:
    """The finished query started by :func:`start_interpreter_query`, or None if none was started.

    Raises:
        subprocess.TimeoutExpired: it did not answer within ``timeout`` seconds (it is killed).
    """
    started = _STARTED.pop(key, None)
    if started is None:
        return None
    process, empty = started
    try:
        stdout, stderr = _finish(process, timeout)
    finally:
        empty.cleanup()
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


class ModuleIndex:
    """Resolves dotted module names to files by path search, with cached directory listings.

    Args:
        source_roots: first-party roots, searched first (after builtin and frozen modules).
        interpreter: the target interpreter's facts (its ``sys.path`` is searched after the roots).

    Module names are plain dotted ``str``. Nothing is imported or executed.
    """

    def __init__(self, source_roots: Sequence[Path], interpreter: InterpreterInfo) -> None:
        self.source_roots: tuple[Path, ...] = tuple(source_roots)
        self.interpreter = interpreter
        root_strs = [str(root) for root in self.source_roots]
        self._search_path: tuple[Path, ...] = tuple(
            Path(entry)
            for entry in dict.fromkeys([*root_strs, *interpreter.sys_path])
            if entry and not entry.endswith((".zip", ".egg", ".whl"))
        )
        self._suffixes: tuple[tuple[str, ModuleKind], ...] = (
            *((suffix, "extension") for suffix in interpreter.extension_suffixes),
            (".py", "source"),
            (".pyc", "bytecode"),
        )
        self._stdlib_dirs = tuple(
            os.path.normcase(os.path.abspath(d)) + os.sep for d in interpreter.stdlib_dirs
        )
        self._roots_prefixes = tuple(
            os.path.normcase(os.path.abspath(r)) + os.sep for r in self.source_roots
        )
        # the interpreter's own entries: what lies below one is installed, even inside a source root
        self._installed_prefixes = tuple(
            prefix for prefix in dict.fromkeys(
                os.path.normcase(os.path.abspath(entry)) + os.sep
                for entry in interpreter.sys_path if entry
            ) if prefix not in self._roots_prefixes
        )
        self._distributions: dict[str, str] | None = None
        self._listings: dict[Path, frozenset[str] | None] = {}
        self._resolved: dict[str, ResolvedModule] = {}
        self._redirects: dict[str, str] = {}
        for finder in reversed(interpreter.meta_path):  # the first finder on sys.meta_path wins
            self._redirects.update(FINDER_REDIRECTS.get(finder, {}))

    # -- queries -----------------------------------------------------------------------------------

    def resolve_module(self, name: str) -> ResolvedModule:
        """Return where ``name`` is found; kind ``unresolved`` if it cannot be found.

        A submodule is searched in its parent package's locations only (so a parent that is not a
        package, or unresolved, makes it unresolved). Results are cached.
        """
        cached = self._resolved.get(name)
        if cached is not None:
            return cached
        # Parents first, from the top, so that resolving one module never recurses more than once
        # (a package 500 levels deep was a RecursionError).
        parts = name.split(".")
        for end in range(1, len(parts)):
            parent = ".".join(parts[:end])
            if parent not in self._resolved:
                self._resolved[parent] = self._resolve_uncached(parent)
        result = self._resolve_uncached(name)
        self._resolved[name] = result
        return result

    def add_search_location(self, directory: Path) -> None:
        """Search ``directory`` after every other ``sys.path`` entry from now on: import-time code
        added it to ``sys.path`` (rule 7). Names not found so far are searched again; names found
        stay where they were found (an added directory comes last, or the engine takes it so)."""
        if directory in self._search_path or not self._listdir(directory):
            return
        self._search_path = (*self._search_path, directory)
        self._resolved = {
            name: found for name, found in self._resolved.items()
            if found.kind not in ("unresolved", "namespace")
        }

    def has_distribution(self, name: str) -> bool:
        """Whether a distribution named ``name`` is installed on the search path: a
        ``<name>-<version>.dist-info`` or ``.egg-info`` entry whose name part is ``name`` once both
        are normalised, as ``importlib.metadata.Distribution.from_name`` finds it (PEP 503
        normalisation, ``-`` as ``_``; ``importlib.metadata._adapters``/``Prepared.normalize``,
        ``FastPath.search``). Nothing is read but the directories' listings."""
        wanted = _normalized_distribution(name)
        return any(
            _normalized_distribution(distribution) == wanted
            for _, distribution in self._distribution_entries(self._search_path)
        )

    def distribution_of(self, top_level: str) -> str:
        """The installed distribution that provides the top-level module or package
        ``top_level`` (``torchgen`` -> ``torch``), as ``importlib.metadata.packages_distributions``
        maps them: the names in each ``*.dist-info``/``*.egg-info`` directory's ``top_level.txt``,
        else the first parts of the paths in its ``RECORD`` (PEP 376, PEP 627), on the
        interpreter's ``sys.path`` in order (the first distribution that names it); the
        distribution's name as its directory spells it. ``top_level`` itself when none names it.
        Files are read, nothing is imported."""
        if self._distributions is None:
            self._distributions = {}
            directories = [Path(entry) for entry in self.interpreter.sys_path]
            for metadata, distribution in self._distribution_entries(directories, ordered=True):
                for provided in _distribution_top_levels(metadata, self._suffixes):
                    self._distributions.setdefault(provided, distribution)
        return self._distributions.get(top_level, top_level)

    def _distribution_entries(
        self, directories: Sequence[Path], *, ordered: bool = False
    ) -> Iterator[tuple[Path, str]]:
        """``(metadata directory, distribution name as its directory spells it)`` of each
        ``<name>-<version>.dist-info`` / ``.egg-info`` entry of ``directories``, in their order
        (each directory's entries sorted when ``ordered``)."""
        for directory in directories:
            listing = self._listdir(directory) or ()
            for entry in sorted(listing) if ordered else listing:
                stem, dot, suffix = entry.rpartition(".")
                if dot and suffix in ("dist-info", "egg-info"):
                    yield directory / entry, stem.partition("-")[0]

    def find_children(self, name: str) -> tuple[str, ...]:
        """Names of the direct submodules of package ``name`` (sorted; empty for non-packages)."""
        package = self.resolve_module(name)
        children: set[str] = set()
        for location in package.locations:
            for entry in self._listdir(location) or ():
                child = _module_name_of_entry(location, entry, self._suffixes)
                if child is not None and child != "__init__":
                    children.add(f"{name}.{child}")
        return tuple(sorted(c for c in children if self.resolve_module(c).kind != "unresolved"))

    def find_descendants(self, name: str) -> Iterator[str]:
        """Yield every submodule of package ``name``, depth first, in sorted order.

        A package directory reached again through a symlink loop (``pkg/sub/up -> ..``) is not
        entered twice, so the walk always ends; it keeps its own stack, so any depth is walked.
        """
        seen = {os.path.realpath(location) for location in self.resolve_module(name).locations}
        stack = [iter(self.find_children(name))]
        while stack:
            child = next(stack[-1], None)
            if child is None:
                stack.pop()
                continue
            yield child
            real = {os.path.realpath(location) for location in self.resolve_module(child).locations}
            if real and real <= seen:
                continue
            seen.update(real)
            stack.append(iter(self.find_children(child)))

    def find_first_party_top_levels(self) -> tuple[str, ...]:
        """Names of the top-level modules and packages found directly in the source roots."""
        names: set[str] = set()
        for root in self.source_roots:
            for entry in self._listdir(root) or ():
                name = _module_name_of_entry(root, entry, self._suffixes)
                if name is not None and name.isidentifier():
                    names.add(name)
        return tuple(sorted(n for n in names if self.resolve_module(n).origin == "first-party"))

    def find_top_levels(self) -> tuple[str, ...]:
        """Names of every top-level module and package on the search path (source roots, then the
        interpreter's ``sys.path``) and of the builtin modules, sorted: the names ``import x`` may
        find."""
        names = {name for name in self.interpreter.builtin | self.interpreter.frozen if "." not in name}
        for directory in self._search_path:
            for entry in self._listdir(directory) or ():
                name = _module_name_of_entry(directory, entry, self._suffixes)
                if name is not None and name.isidentifier():
                    names.add(name)
        return tuple(sorted(names))

    def find_listed_directories(self) -> tuple[Path, ...]:
        """Every directory listed so far (path search depends on these listings), sorted."""
        return tuple(sorted(self._listings))

    def origin_of_path(self, path: Path) -> Origin:
        """Classify a file or directory as first-party, stdlib or third-party by where it lies: under
        a source root is first-party, except below a ``site-packages`` or ``dist-packages``
        directory there (a virtual environment inside the project) or below an entry of the
        interpreter's ``sys.path`` there that is not a source root itself (``PYTHONPATH=.venv/site``):
        what is found through such an entry is installed code (docs/policy.md ``source-roots``)."""
        text = os.path.normcase(os.path.abspath(path))
        for prefix in self._roots_prefixes:
            if text.startswith(prefix):
                # a virtual environment inside the project (``.venv/lib/.../site-packages``), or
                # an entry of the interpreter's sys.path there (PYTHONPATH=.venv/site)
                below = text[len(prefix):].split(os.sep)
                if "site-packages" in below or "dist-packages" in below or any(
                    len(entry) > len(prefix) and text.startswith(entry)
                    for entry in self._installed_prefixes
                ):
                    return "third-party"
                return "first-party"
        if text.startswith(self._stdlib_dirs):
            parts = text.split(os.sep)
            if "site-packages" not in parts and "dist-packages" not in parts:
                return "stdlib"
        return "third-party"

    # -- path search -------------------------------------------------------------------------------

    def _resolve_uncached(self, name: str) -> ResolvedModule:
        if not name or not all(part.isidentifier() for part in name.split(".")):
            return ResolvedModule(name, "unresolved", "unknown")
        preloaded = name in self.interpreter.preloaded
        parent, _, last = name.rpartition(".")
        if not parent:
            if name in self.interpreter.builtin:
                return ResolvedModule(name, "builtin", "stdlib", preloaded=preloaded)
            redirected = self._redirect(name, preloaded)
            if redirected is not None:
                return redirected
            locations = self._search_path
        else:
            parent_module = self.resolve_module(parent)
            if not parent_module.locations:
                if preloaded:  # e.g. os.path: put in sys.modules by os at start-up
                    return ResolvedModule(name, "frozen", "stdlib", preloaded=True)
                return ResolvedModule(name, "unresolved", parent_module.origin)
            locations = parent_module.locations
        found = self._path_search(last, locations)
        if name in self.interpreter.frozen:
            # FrozenImporter comes before PathFinder; it still exposes the stdlib directory as
            # __path__ for frozen packages, so keep the locations found on disk.
            return ResolvedModule(
                name, "frozen", "stdlib", None, found.locations if found else (), preloaded
            )
        if found is None:
            if preloaded:  # e.g. os.path: set up at start-up, not found by path search
                return ResolvedModule(name, "frozen", "stdlib", preloaded=True)
            origin: Origin = "unknown" if not parent else self.resolve_module(parent).origin
            return ResolvedModule(name, "unresolved", origin, preloaded=preloaded)
        origin_path = found.path or (found.locations[0] if found.locations else None)
        origin = self.origin_of_path(origin_path) if origin_path is not None else "unknown"
        return ResolvedModule(
            name, found.kind, origin, found.path, found.locations, preloaded, found.compiled
        )

    def _redirect(self, name: str, preloaded: bool) -> ResolvedModule | None:
        """``name`` as a meta-path finder installed at start-up returns it (before ``PathFinder``),
        or None when no such finder claims it or its module is not found."""
        real_name = self._redirects.get(name)
        if real_name is None:
            return None
        real = self.resolve_module(real_name)
        if real.kind == "unresolved":
            return None  # the finder falls back to the usual search (it returns None)
        return dataclasses.replace(real, name=name, preloaded=preloaded, found_as=real_name)

    def _path_search(self, last: str, locations: Sequence[Path]) -> ResolvedModule | None:
        portions: list[Path] = []
        for directory in locations:
            entries = self._listdir(directory)
            if not entries:
                continue
            is_dir = False
            if last in entries:
                candidate = directory / last
                sub_entries = self._listdir(candidate)
                if sub_entries is not None:
                    is_dir = True
                    for suffix, kind in self._suffixes:
                        init = "__init__" + suffix
                        if init in sub_entries and _is_module_file(candidate / init):
                            twin = self._compiled_twin(candidate, "__init__", kind, sub_entries)
                            if twin is not None:
                                return ResolvedModule(last, "package", "unknown", twin, (candidate,),
                                                      compiled=True)
                            package_kind: ModuleKind = "package" if kind == "source" else kind
                            return ResolvedModule(last, package_kind, "unknown", candidate / init,
                                                  (candidate,))
            for suffix, kind in self._suffixes:
                filename = last + suffix
                if filename in entries and _is_module_file(directory / filename):
                    twin = self._compiled_twin(directory, last, kind, entries)
                    if twin is not None:
                        return ResolvedModule(last, "source", "unknown", twin, compiled=True)
                    return ResolvedModule(last, kind, "unknown", directory / filename)
            if is_dir:
                portions.append(directory / last)
        if portions:
            return ResolvedModule(last, "namespace", "unknown", None, tuple(portions))
        return None

    def _compiled_twin(
        self, directory: Path, stem: str, kind: ModuleKind, entries: frozenset[str]
    ) -> Path | None:
        """The ``.py`` source of a mypyc-compiled extension module, or None.

        mypyc ships each compiled module beside its source (``black/linegen.py`` and
        ``black/linegen.cpython-311-x86_64-linux-gnu.so``) with one shared runtime library
        (``<hash>__mypyc.cpython-311-x86_64-linux-gnu.so``) in the directory of the top-level
        package; the extension wins path search (rule 6) and runs what its source runs.
        """
        if kind != "extension":
            return None
        if stem + ".py" not in entries:
            # a Cython module whose .pyx the wheel ships beside it (pyarrow's lib.pyx): its
            # module-level imports are read from there (analysis/pyx.py)
            cython = directory / (stem + PYX_SUFFIX)
            return cython if stem + PYX_SUFFIX in entries and _is_module_file(cython) else None
        twin = directory / (stem + ".py")
        if not _is_module_file(twin) or not self._under_mypyc_runtime(directory):
            return None
        return twin

    def _under_mypyc_runtime(self, directory: Path) -> bool:
        """Whether ``directory`` or a parent up to its path entry holds a mypyc runtime library."""
        suffixes = tuple("__mypyc" + suffix for suffix in self.interpreter.extension_suffixes)
        current = directory
        for _ in range(64):  # a package deeper than this is not a mypyc tree worth the listing
            if any(entry.endswith(suffixes) for entry in self._listdir(current) or ()):
                return True
            if current in self._search_path or current.parent == current:
                return False
            current = current.parent
        return False

    def _listdir(self, directory: Path) -> frozenset[str] | None:
        """Entries of ``directory`` (cached), or None if it is not a readable directory."""
        if directory in self._listings:
            return self._listings[directory]
        try:
            listing: frozenset[str] | None = frozenset(os.listdir(directory))
        except (OSError, ValueError):  # ValueError: a NUL in a computed path
            listing = None
        self._listings[directory] = listing
        return listing


_METADATA_MOST_BYTES = 64 << 20
"""The largest ``top_level.txt`` or ``RECORD`` read (torch's RECORD is a few MB)."""


def _distribution_top_levels(
    metadata: Path, suffixes: Sequence[tuple[str, ModuleKind]]
) -> tuple[str, ...]:
    """The top-level names a distribution's metadata directory says it installs: its
    ``top_level.txt`` lines, else the first parts of its ``RECORD`` paths that name a module or
    package (``importlib.metadata._top_level_declared`` / ``_top_level_inferred``); none when
    neither can be read."""
    for filename in ("top_level.txt", "RECORD"):
        try:
            with open(metadata / filename, "rb") as stream:
                data = stream.read(_METADATA_MOST_BYTES)
        except (OSError, ValueError):
            continue
        text = data.decode("utf-8", "replace")
        if filename == "top_level.txt":
            return tuple(line.strip() for line in text.splitlines() if line.strip().isidentifier())
        names: dict[str, None] = {}
        for line in text.splitlines():
            first = line.partition(",")[0].replace("\\", "/").partition("/")
            if first[1]:  # a directory: a package (or namespace portion) unless metadata
                name: str | None = first[0]
            else:
                name = next((first[0][:-len(suffix)] for suffix, _ in suffixes
                             if first[0].endswith(suffix)), None)
            if name and name.isidentifier() and name != "__pycache__":
                names[name] = None
        return tuple(names)
    return ()


def _normalized_distribution(name: str) -> str:
    """A distribution name as ``importlib.metadata`` compares them: runs of ``-``, ``_`` and
    ``.`` as one ``_``, lower case."""
    return re.sub(r"[-_.]+", "_", name).lower()


def read_source(path: Path) -> bytes:
    """Read a module's source without ever blocking, as :func:`read_source_stamped` does, without
    hashing it (for callers that need no digest, or compute their own).

    Raises:
        OSError: if ``path`` cannot be opened or read, is not a regular file or is too large.
    """
    data = read_regular_file(path)[1]
    return python_skeleton(path, data) if path.suffix == PYX_SUFFIX else data


def read_source_stamped(path: Path) -> tuple[bytes, SourceRead]:
    """Read a module's source without ever blocking, with what was read.

    The file is opened non-blocking and checked to be a regular file of at most
    :data:`~flake8_importpolicy.model.reading.MAX_FILE_BYTES` before it is read
    (:func:`~flake8_importpolicy.model.reading.read_regular_file`), so a FIFO or device named like a
    module fails at once instead of waiting for a writer. Its ``stat`` is taken on the open file
    before the read.

    Returns:
        ``(bytes, SourceRead(digest, size, mtime_ns, read_ns))``.

    Raises:
        OSError: if ``path`` cannot be opened or read, is not a regular file or is too large.
    """
    read_ns = time.time_ns()
    st, data = read_regular_file(path)
    if path.suffix == PYX_SUFFIX:  # a Cython module's source: what it runs, as Python
        data = python_skeleton(path, data)
    return data, SourceRead(hashlib.sha256(data).hexdigest(), st.st_size, st.st_mtime_ns, read_ns)


def _is_module_file(path: Path) -> bool:
    """Anything but a directory. CPython's ``FileFinder`` takes regular files only
    (``_path_isfile``) and raises ModuleNotFoundError for the rest; here a FIFO, socket or device
    named like a module (a symbolic link to ``/dev/null``, say), or a path that cannot be ``stat``-ed
    (a dangling symlink, a symlink loop) is kept: reading it then reports the module as unanalysable
    (IPL005) instead of dropping it silently. Only regular files are ever read as sources."""
    try:
        return not stat.S_ISDIR(os.stat(path).st_mode)
    except OSError:
        return True


def _module_name_of_entry(
    directory: Path, entry: str, suffixes: Sequence[tuple[str, ModuleKind]]
) -> str | None:
    if entry.startswith(".") or entry == "__pycache__":
        return None
    for suffix, _kind in suffixes:
        if entry.endswith(suffix):
            stem = entry[: -len(suffix)]
            return stem if stem.isidentifier() else None
    if entry.isidentifier() and (directory / entry).is_dir():
        return entry
    return None
