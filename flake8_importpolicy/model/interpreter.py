"""What path search knows about the target interpreter, and where a module name is found.

Value objects of :mod:`flake8_importpolicy.analysis.resolve` (which computes them by path search and one
query of the interpreter); the interpreter cache stores :class:`InterpreterInfo` as JSON.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = ["InterpreterInfo", "ModuleKind", "Origin", "ResolvedModule"]

ModuleKind = Literal[
    "source", "package", "namespace", "extension", "bytecode", "builtin", "frozen", "unresolved"
]
Origin = Literal["first-party", "third-party", "stdlib", "unknown"]


@dataclass(frozen=True)
class InterpreterInfo:
    """What path search needs to know about the target interpreter.

    Attributes:
        executable: the interpreter's path.
        version: its ``(major, minor)``.
        platform: its ``sys.platform``.
        sys_path: ``sys.path`` of ``python -c`` without the leading script directory entry.
        builtin: ``sys.builtin_module_names``.
        frozen: ``_imp._frozen_module_names()`` (empty before 3.11).
        preloaded: modules in ``sys.modules`` when ``python -c`` starts running its command.
        stdlib_dirs: ``sysconfig`` ``stdlib`` and ``platstdlib`` paths.
        extension_suffixes: ``importlib.machinery.EXTENSION_SUFFIXES`` of that interpreter.
        meta_path: the class of each finder on ``sys.meta_path`` at start-up (``module.qualname``),
            in order: a ``.pth`` file may install one that redirects a top-level name (setuptools'
            ``_distutils_hack.DistutilsMetaFinder``, docs/semantics.md rule 7).
        prefix: its ``sys.prefix`` (a venv's directory for a venv's interpreter).
        user_site: its user site directory when the user site is enabled (``site.ENABLE_USER_SITE``),
            whether or not it exists: ``site`` adds it to ``sys.path`` once it does, so caches watch
            it; None when disabled (``-s``, ``PYTHONNOUSERSITE``, a venv).
        entry_points: ``(group, name, value)`` of every installed entry point, as
            ``importlib.metadata.entry_points()`` lists them (read from the distributions'
            metadata; nothing is imported), sorted: code that imports the modules a group names
            (``for ep in entry_points().select(group=...)``) imports these.
    """

    executable: str
    version: tuple[int, int]
    platform: str
    sys_path: tuple[str, ...]
    builtin: frozenset[str]
    frozen: frozenset[str]
    preloaded: frozenset[str]
    stdlib_dirs: tuple[str, ...]
    extension_suffixes: tuple[str, ...]
    meta_path: tuple[str, ...] = ()
    prefix: str = ""
    user_site: str | None = None
    entry_points: tuple[tuple[str, str, str], ...] = ()

    def entry_point_values(self, group: str, name: str | None = None) -> tuple[str, ...]:
        """The values of the installed entry points of ``group`` (named ``name`` only, when given)."""
        return tuple(
            value for found, point, value in self.entry_points
            if found == group and (name is None or point == name)
        )

    def to_json(self) -> dict[str, object]:
        """A JSON-able dict (for the on-disk cache)."""
        return {
            "executable": self.executable,
            "version": list(self.version),
            "platform": self.platform,
            "sys_path": list(self.sys_path),
            "builtin": sorted(self.builtin),
            "frozen": sorted(self.frozen),
            "preloaded": sorted(self.preloaded),
            "stdlib_dirs": list(self.stdlib_dirs),
            "extension_suffixes": list(self.extension_suffixes),
            "meta_path": list(self.meta_path),
            "prefix": self.prefix,
            "user_site": self.user_site,
            "entry_points": [list(point) for point in self.entry_points],
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> InterpreterInfo:
        """Inverse of :meth:`to_json`.

        Raises:
            KeyError, TypeError, ValueError: if ``data`` is not what :meth:`to_json` produced.
        """

        def strings(key: str) -> tuple[str, ...]:
            value = data[key]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise TypeError(key)
            return tuple(value)

        def string(key: str) -> str:
            value = data[key]
            if not isinstance(value, str):
                raise TypeError(key)
            return value

        version = data["version"]
        if (not isinstance(version, list) or len(version) != 2
                or not all(type(part) is int and 0 <= part < 1000 for part in version)):
            raise TypeError("version")
        user_site = data.get("user_site")
        if user_site is not None and not isinstance(user_site, str):
            raise TypeError("user_site")
        points = data.get("entry_points", [])
        if not isinstance(points, list) or not all(
            isinstance(point, list) and len(point) == 3 and all(isinstance(p, str) for p in point)
            for point in points
        ):
            raise TypeError("entry_points")
        return cls(
            executable=string("executable"),
            version=(version[0], version[1]),
            platform=string("platform"),
            sys_path=strings("sys_path"),
            builtin=frozenset(strings("builtin")),
            frozen=frozenset(strings("frozen")),
            preloaded=frozenset(strings("preloaded")),
            stdlib_dirs=strings("stdlib_dirs"),
            extension_suffixes=strings("extension_suffixes"),
            meta_path=strings("meta_path") if "meta_path" in data else (),
            prefix=string("prefix") if "prefix" in data else "",
            user_site=user_site,
            entry_points=tuple((point[0], point[1], point[2]) for point in points),
        )


@dataclass(frozen=True)
class ResolvedModule:
    """Where a dotted module name is found and what kind of module it is.

    Attributes:
        name: the dotted module name.
        kind: ``source`` (a ``.py`` module), ``package`` (a regular package; ``path`` is its
            ``__init__``), ``namespace`` (PEP 420, runs no code), ``extension`` (compiled; its imports
            are unknown), ``bytecode`` (``.pyc`` only), ``builtin``, ``frozen`` or ``unresolved``.
        origin: ``first-party`` (under a source root), ``stdlib``, ``third-party`` or ``unknown``.
        path: the file that runs (``None`` for namespace, builtin, frozen and unresolved modules);
            for a ``compiled`` module, the ``.py`` source it was compiled from, which is analysed.
        locations: the package's ``__path__`` (directories searched for its submodules).
        preloaded: already imported at interpreter start-up, so importing it runs nothing.
        compiled: an extension module compiled by mypyc from the ``.py`` twin beside it (``path``):
            it runs the same imports as its source (hops to it carry the flag ``compiled-twin``).
        found_as: the module a meta-path finder imports and returns under this name (``distutils``
            is ``setuptools._distutils`` with setuptools' finder installed): its parent packages
            run first (hop kind ``finder``), then its file, once, under this name.
    """

    name: str
    kind: ModuleKind
    origin: Origin
    path: Path | None = None
    locations: tuple[Path, ...] = ()
    preloaded: bool = False
    compiled: bool = False
    found_as: str | None = None

    @property
    def is_package(self) -> bool:
        """True for regular and namespace packages (modules with a ``__path__``)."""
        return bool(self.locations) or self.kind in ("package", "namespace")

    @property
    def has_source(self) -> bool:
        """True if the module runs Python source that can be analysed (``source`` or ``package``)."""
        return self.kind in ("source", "package") and self.path is not None
