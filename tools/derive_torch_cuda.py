"""Derive the built-in ``torch-cuda`` and ``torch-cuda-driver`` presets from torch's own source.

Standard library only; torch is never imported. The script reads ``torch/cuda/**/*.py`` (and
``torch/_utils.py``, through which ``torch.cuda._get_device_index`` finds the current device) straight
out of a torch wheel (``--wheel``), an installed torch directory (``--torch-dir``) or, by default, the
wheel of ``torch==--version`` fetched with ``pip download --no-deps`` into the wheel cache the
benchmarks share (:func:`wheel_cache`). Nothing of torch is written into the repository.

Outputs ``flake8_importpolicy/presets/torch-cuda.toml`` and ``torch-cuda-driver.toml``: a
``[heavy-calls]`` table each. ``--check`` re-derives and compares with the committed files (exit 1
with a diff), ``--markdown`` prints the entries as a Markdown table.

The analysis (what "initialises CUDA" means, rule by rule)
-----------------------------------------------------------
R1  Seeds, preset ``torch-cuda``: a call that resolves to ``torch.cuda._lazy_init`` (under any name
    it is imported or aliased as), or to one of the ``torch._C`` functions in ``C_LAZY_INIT``, whose
    C++ wrappers (torch/csrc/cuda/Module.cpp) call ``torch::utils::device_lazy_init(at::kCUDA)``,
    which runs ``torch.cuda._lazy_init()`` -- e.g. ``set_device`` reaches no Python ``_lazy_init``
    but ``torch._C._cuda_setDevice`` does. These C++ facts are not in the wheel: they are listed
    here, by the name of the C++ wrapper, and cited as such.
R2  Seeds, preset ``torch-cuda-driver``: a call to a ``torch._C`` function in ``C_FORK``, whose C++
    wrapper registers torch's at-fork handler (``_cuda_getDeviceCount``: also runs
    ``cudaGetDeviceCount``, which initialises the driver). A child forked afterwards is "in a bad
    fork": its first ``_lazy_init()`` raises *Cannot re-initialize CUDA in forked subprocess*.
    Entries already in ``torch-cuda`` are left out of ``torch-cuda-driver``.
R3  Calls are followed through module-level functions, methods and classes of ``torch.cuda`` (every
    ``torch/cuda/**/*.py``) and ``torch._utils``: names resolve through ``import``/``from ...
    import`` (relative or absolute, ``as`` aliases, ``*`` with ``__all__``), module-level aliases
    (``_exchange_device = torch._C._cuda_exchangeDevice``), attribute chains (``torch.cuda.X``,
    ``torch.cuda.memory.X``, ``torch._C.X``), nested ``def``s called by name, ``self.m()``,
    ``super().m()``. A name bound several ways (``if hasattr(torch._C, ...): X = ... else: def X``)
    reaches a seed if any binding does.
R4  Calling a class runs its ``__new__`` and ``__init__`` (own or inherited from an analysed base);
    ``with C(...)`` also runs ``__enter__`` and ``__exit__``. A class is an entry when constructing
    it reaches a seed; C++ base classes (``torch._C._CudaStreamBase``) are not analysed, so
    ``Event`` (all C++) is not listed although recording an event initialises CUDA.
R5  A function's body counts as run when it is called (also a ``@contextmanager`` generator, whose
    body runs when the ``with`` enters). A nested ``def`` or ``lambda`` runs only when called, so
    passing one to ``_lazy_call(cb)`` does not count: ``_lazy_call`` calls it only under
    ``if is_initialized():`` (R6) and otherwise queues it until CUDA is initialised -- the seeding
    functions (``manual_seed``, ``seed``, ``set_rng_state``) are therefore not entries.
R6  Initialised-only code does not count: the body of ``if P:``, the ``else`` of ``if not P:``,
    everything after ``if not P: return/raise``, and the ``P``-branch of ``x if P else y``, where P is
    ``is_initialized()``, ``torch.cuda.is_initialized()``, ``_initialized``,
    ``hasattr(_tls, "is_initializing")``, or an ``and`` containing / an ``or`` made of those. Likewise
    the ``torch.jit.is_scripting()`` branches, never taken when Python runs the code. Other guards
    (``is_available()``, ``torch.version.hip``) are not pruned: on a CUDA machine they pass; the
    reason quotes them ("unless torch.version.hip").
R7  Parameters: a call under ``if p:``, ``if not p:``, ``if p is None:`` or ``if p is not None:`` (also
    inside ``and``/``or``) for a parameter ``p`` is dropped when the caller passes (or defaults) a
    constant that makes the test go the other way, e.g. ``_get_device_index(device)``
    (``optional=False``) does not look up the current device but ``_get_device_index(device,
    optional=True)`` does, and ``Stream()`` (``device=None``) does not enter ``torch.cuda.device``.
    Constants, modules, functions and lambdas are passed through calls; a lambda passed to a parameter
    that is called runs with its arguments (``_get_device_attr(lambda m: m.current_device())`` calls
    ``get_member(torch.cuda)``). A public entry itself is analysed with unknown arguments.
R8  Entries: public names (no ``_``) of ``torch.cuda`` that are functions or classes defined in
    ``torch/cuda`` (defined in, imported into, or listed in ``__all__`` of ``torch/cuda/__init__.py``),
    each also under its defining module when that differs (``torch.cuda.memory.memory_allocated``),
    plus the public functions and classes of torch.cuda's public submodules
    (``torch.cuda.tunable.tune_gemm_in_file``). Private modules (``torch.cuda._utils``) are skipped.
R9  The reason cites one call chain: the one with the fewest quoted conditions (R6), then the fewest
    hops, then the earliest line. It names the file:line of the first hop in the entry's own body,
    the function called there and the last function before the seed (``--markdown``: all of them).
"""

from __future__ import annotations

import argparse
import ast
import difflib
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional, Union

REPO = Path(__file__).resolve().parent.parent
PRESETS = REPO / "flake8_importpolicy" / "presets"
DEFAULT_VERSION = "2.13.0"
MAX_DEPTH = 12

# torch._C functions whose C++ wrapper (torch/csrc/cuda/Module.cpp, upstream; the wheel has no C++
# source) calls torch::utils::device_lazy_init(at::kCUDA), which runs torch.cuda._lazy_init() (R1):
# value = (the C++ function, what the reason says after the call).
C_LAZY_INIT = {
    "_cuda_init": ("THCPModule_initExtension", "which initialises CUDA"),
    "_cuda_setDevice": ("THCPModule_setDevice_wrap", "whose C++ wrapper runs _lazy_init()"),
    "_cuda_getDevice": ("THCPModule_getDevice_wrap", "whose C++ wrapper runs _lazy_init()"),
    "_cuda_exchangeDevice": ("THCPModule_exchangeDevice", "whose C++ wrapper runs _lazy_init()"),
    "_cuda_maybeExchangeDevice": ("THCPModule_maybeExchangeDevice", "whose C++ wrapper runs _lazy_init()"),
    "_cuda_canDeviceAccessPeer": ("THCPModule_canDeviceAccessPeer_wrap",
                                  "whose C++ wrapper runs _lazy_init()"),
}
# torch._C functions whose C++ wrapper calls torch::utils::register_fork_handler_for_device_init(kCUDA)
# (older torch: poison_fork()), so that a child forked afterwards is "in a bad fork" (R2).
C_FORK = {
    "_cuda_getDeviceCount": ("THCPModule_getDeviceCount_wrap",
                             "which also initialises the CUDA driver (cudaGetDeviceCount runs cuInit)"),
    "_cuda_getArchFlags": ("THCPModule_getArchFlags", ""),
}
# Why a condition on the cited call matters, in words (otherwise the condition is quoted).
CONDITION_NOTES = {
    "not _nvml_based_avail()": "unless PYTORCH_NVML_BASED_CUDA_CHECK=1",
    "nvml_count < 0": (
        "when NVML cannot count the devices (no libnvidia-ml, MIG UUIDs in CUDA_VISIBLE_DEVICES)"
    ),
}
# Conditions that an environment variable decides: an entry whose reason carries the note is written
# as a table with ``unless-environ`` (the call is not heavy when the variable has the value; the
# engine reads [assume.environ] and what the code sets before the call).
CONDITION_ENVIRON = {
    "unless PYTORCH_NVML_BASED_CUDA_CHECK=1": (("PYTORCH_NVML_BASED_CUDA_CHECK", "1"),),
}
LAZY = "torch-cuda"
DRIVER = "torch-cuda-driver"
ANALYSED_EXTRA = ("torch/_utils.py",)


# ---------------------------------------------------------------------------------------------
# Sources: a wheel, an installed directory


class Source:
    """The torch files the analysis reads, by path relative to site-packages (``torch/...``)."""

    label: str
    sha256: Optional[str] = None

    def names(self) -> list[str]:
        raise NotImplementedError

    def read(self, name: str) -> str:
        raise NotImplementedError

    def version(self) -> str:
        text = self.read("torch/version.py")
        match = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", text, re.M)
        if not match:
            raise SystemExit("torch/version.py has no __version__")
        return match.group(1)


class WheelSource(Source):
    def __init__(self, path: Path) -> None:
        self.path = path
        self.label = path.name
        digest = hashlib.sha256()
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
        self.sha256 = digest.hexdigest()
        self.zip = zipfile.ZipFile(path)
        self._names = self.zip.namelist()

    def names(self) -> list[str]:
        return self._names

    def read(self, name: str) -> str:
        return self.zip.read(name).decode("utf-8")


class DirSource(Source):
    def __init__(self, torch_dir: Path) -> None:
        self.root = torch_dir.resolve().parent
        self.label = f"installed directory {torch_dir}"
        self._names = sorted(
            p.relative_to(self.root).as_posix() for p in torch_dir.resolve().rglob("*.py")
        )

    def names(self) -> list[str]:
        return self._names

    def read(self, name: str) -> str:
        return (self.root / name).read_text(encoding="utf-8")


def find_cached_wheel(directory: Path, version: str) -> Optional[Path]:
    """A torch wheel of ``version`` (any local label: ``2.13.0+cpu``) in ``directory``."""
    if not directory.is_dir():
        return None
    for whl in sorted(directory.glob("torch-*.whl")):
        wheel_version = whl.name.split("-")[1]
        if wheel_version == version or wheel_version.startswith(version + "+"):
            return whl
    return None


def wheel_cache() -> Path:
    """Where downloaded wheels are kept: ``wheels/`` of ``$IMPORTPOLICY_BENCH_CACHE``, else of
    ``~/.cache/flake8-importpolicy`` (the cache ``benchmarks/fetch.py`` uses, so a torch wheel is
    downloaded once for both). May not exist yet."""
    env = os.environ.get("IMPORTPOLICY_BENCH_CACHE")
    root = Path(env) if env else Path.home() / ".cache" / "flake8-importpolicy"
    return root.expanduser() / "wheels"


def download_wheel(version: str) -> Path:
    """The torch ``version`` wheel from :func:`wheel_cache`, downloaded there first if missing."""
    wheels = wheel_cache()
    found = find_cached_wheel(wheels, version)
    if found is not None:
        return found
    wheels.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", f"torch=={version}", "--no-deps",
           "--only-binary=:all:", "-d", str(wheels)]
    print(f"[derive] {' '.join(cmd)}", file=sys.stderr)
    subprocess.run(cmd, check=True)
    found = find_cached_wheel(wheels, version)
    if found is None:
        raise SystemExit(f"pip download succeeded but no torch {version} wheel in {wheels}")
    return found


# ---------------------------------------------------------------------------------------------
# Values the resolver works with


@dataclass(frozen=True)
class ModuleV:
    name: str


@dataclass(frozen=True)
class FuncV:
    module: str
    qualname: str
    node: ast.AST  # compared by identity: one value per definition (@overload)
    cls: Optional[str] = None  # qualname of the class for a method


@dataclass(frozen=True)
class ClassV:
    module: str
    qualname: str
    node: ast.ClassDef


@dataclass(frozen=True)
class InstanceV:
    cls: ClassV


@dataclass(frozen=True)
class SuperV:
    cls: ClassV


@dataclass(frozen=True)
class CFuncV:
    name: str


@dataclass(frozen=True)
class ConstV:
    value: object


@dataclass(frozen=True)
class LambdaV:
    module: str
    node: ast.Lambda
    line: int = 0


Value = Union[ModuleV, FuncV, ClassV, InstanceV, SuperV, CFuncV, ConstV, LambdaV]
Seen = frozenset[tuple[str, str]]
"""(module, name) pairs a lookup has already followed: a cycle of aliases ends."""
Conds = tuple[tuple[str, str, bool], ...]
"""R7: (parameter, \"truth\"/\"none\", required value) of each enclosing test."""


@dataclass
class Binding:
    kind: str  # def, class, import, alias
    node: Optional[ast.AST] = None
    target: str = ""  # import: module name
    attr: Optional[str] = None  # import: the name imported from it (None: the module itself)


@dataclass
class Module:
    name: str
    path: str
    tree: ast.Module
    is_package: bool
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    star: list[str] = field(default_factory=list)
    all_names: Optional[list[str]] = None

    def package(self) -> str:
        return self.name if self.is_package else self.name.rpartition(".")[0]


@dataclass(frozen=True)
class CallSite:
    line: int
    call: ast.Call = field(compare=False, hash=False)
    conds: tuple[tuple[str, str, bool], ...]  # R7: (parameter, "truth"/"none", required value)
    notes: tuple[str, ...]  # enclosing conditions, in words, for the reason
    enter: bool = False  # the context expression of a ``with``: also __enter__/__exit__


@dataclass(frozen=True)
class Hop:
    path: str
    line: int
    callee: str  # "current_device()", "torch._C._cuda_setDevice()", "with device(...)"
    notes: tuple[str, ...]


@dataclass(frozen=True)
class Seed:
    display: str
    why: str


Witness = tuple[tuple[Hop, ...], Seed]


def rank(witness: Witness) -> tuple[int, int, int]:
    """R9: fewest conditions on the way, then fewest hops, then the earliest line."""
    hops = witness[0]
    return (sum(len(h.notes) for h in hops), len(hops), hops[0].line)


# ---------------------------------------------------------------------------------------------
# Parsing and name resolution


def module_name(path: str) -> tuple[str, bool]:
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def _assign_targets(stmt: ast.stmt) -> list[tuple[str, Optional[ast.expr]]]:
    if isinstance(stmt, ast.Assign):
        return [(t.id, stmt.value) for t in stmt.targets if isinstance(t, ast.Name)]
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return [(stmt.target.id, stmt.value)]
    return []


def _module_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Module-level statements, also inside if/try/with blocks (not in functions or classes)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            if _is_type_checking(stmt.test):
                continue
            yield from _module_level(stmt.body)
            yield from _module_level(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            yield from _module_level(stmt.body)
            for handler in stmt.handlers:
                yield from _module_level(handler.body)
            yield from _module_level(stmt.orelse)
            yield from _module_level(stmt.finalbody)
        elif isinstance(stmt, ast.With):
            yield from _module_level(stmt.body)


def _is_type_checking(test: ast.expr) -> bool:
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"


class Program:
    def __init__(self, source: Source) -> None:
        self.modules: dict[str, Module] = {}
        paths = [n for n in source.names()
                 if n.startswith("torch/cuda/") and n.endswith(".py")]
        paths += [n for n in ANALYSED_EXTRA if n in source.names()]
        for path in sorted(paths):
            name, is_package = module_name(path)
            tree = ast.parse(source.read(path), filename=path)
            module = Module(name, path, tree, is_package)
            self._collect(module)
            self.modules[name] = module
        if "torch.cuda" not in self.modules:
            raise SystemExit("torch/cuda/__init__.py not found in the source")

    def _collect(self, module: Module) -> None:
        def bind(name: str, binding: Binding) -> None:
            module.bindings.setdefault(name, []).append(binding)

        for stmt in _module_level(module.tree.body):
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                bind(stmt.name, Binding("def", stmt))
            elif isinstance(stmt, ast.ClassDef):
                bind(stmt.name, Binding("class", stmt))
            elif isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.asname:
                        bind(alias.asname, Binding("import", target=alias.name))
                    else:
                        top = alias.name.split(".")[0]
                        bind(top, Binding("import", target=top))
            elif isinstance(stmt, ast.ImportFrom):
                base = self._absolute(module, stmt)
                for alias in stmt.names:
                    if alias.name == "*":
                        module.star.append(base)
                    else:
                        bind(alias.asname or alias.name,
                             Binding("import", target=base, attr=alias.name))
            else:
                for name, value in _assign_targets(stmt):
                    if name == "__all__" and isinstance(value, (ast.List, ast.Tuple)):
                        module.all_names = [e.value for e in value.elts
                                            if isinstance(e, ast.Constant) and isinstance(e.value, str)]
                    elif value is not None:
                        bind(name, Binding("alias", value))

    @staticmethod
    def _absolute(module: Module, stmt: ast.ImportFrom) -> str:
        if not stmt.level:
            return stmt.module or ""
        parts = module.package().split(".")
        if stmt.level > 1:
            parts = parts[: len(parts) - (stmt.level - 1)]
        base = ".".join(parts)
        return f"{base}.{stmt.module}" if stmt.module else base

    # -- lookups -----------------------------------------------------------------------------

    def exported(self, module: Module) -> list[str]:
        if module.all_names is not None:
            return module.all_names
        return [n for n in module.bindings if not n.startswith("_")]

    def module_attr(self, mod: str, attr: str, seen: Seen = frozenset()) -> list[Value]:
        """Values of ``mod.attr``."""
        sub = f"{mod}.{attr}"
        if sub in self.modules:
            return [ModuleV(sub)]
        if mod == "torch._C":
            return [CFuncV(attr)]
        if mod in self.modules:
            return self.lookup(self.modules[mod], attr, seen)
        if mod == "torch" or mod.startswith("torch."):
            return [ModuleV(sub)]
        return []

    def lookup(self, module: Module, name: str, seen: Seen = frozenset()) -> list[Value]:
        key = (module.name, name)
        if key in seen:
            return []
        seen = seen | {key}
        out: list[Value] = []
        for binding in module.bindings.get(name, []):
            if binding.kind == "def":
                assert isinstance(binding.node, (ast.FunctionDef, ast.AsyncFunctionDef))
                out.append(FuncV(module.name, name, binding.node))
            elif binding.kind == "class":
                assert isinstance(binding.node, ast.ClassDef)
                out.append(ClassV(module.name, name, binding.node))
            elif binding.kind == "import":
                if binding.attr is None:
                    out.append(ModuleV(binding.target))
                else:
                    out.extend(self.module_attr(binding.target, binding.attr, seen))
            elif binding.kind == "alias":
                assert isinstance(binding.node, ast.expr)
                ctx = Context(self, module, {}, (), None)
                out.extend(v for v in ctx.resolve(binding.node, seen) if not isinstance(v, ConstV))
        if not out:
            for star in module.star:
                if star in self.modules and name in self.exported(self.modules[star]):
                    out.extend(self.lookup(self.modules[star], name, seen))
        return _unique(out)

    def bases(self, cls: ClassV) -> list[ClassV]:
        module = self.modules[cls.module]
        ctx = Context(self, module, {}, (), None)
        out: list[ClassV] = []
        for base in cls.node.bases:
            out.extend(v for v in ctx.resolve(base) if isinstance(v, ClassV))
        return out

    def mro(self, cls: ClassV) -> list[ClassV]:
        order, todo = [], [cls]
        while todo:
            current = todo.pop(0)
            if current not in order:
                order.append(current)
                todo.extend(self.bases(current))
        return order

    def method(self, cls: ClassV, name: str, after: bool = False) -> list[FuncV]:
        classes = self.mro(cls)
        if after:
            classes = classes[1:]
        for klass in classes:
            for stmt in klass.node.body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == name:
                    return [FuncV(klass.module, f"{klass.qualname}.{name}", stmt, klass.qualname)]
        return []


def _unique(values: list[Value]) -> list[Value]:
    out: list[Value] = []
    for value in values:
        if value not in out:
            out.append(value)
    return out


class Context:
    """Where an expression is resolved: module, parameter values, nested defs, enclosing class."""

    def __init__(self, program: Program, module: Module, params: dict[str, Value],
                 local_defs: tuple[dict[str, ast.AST], ...], cls: Optional[ClassV]) -> None:
        self.program = program
        self.module = module
        self.params = params
        self.local_defs = local_defs
        self.cls = cls

    def resolve(self, expr: ast.expr, seen: Seen = frozenset()) -> list[Value]:
        if isinstance(expr, ast.Constant):
            return [ConstV(expr.value)]
        if isinstance(expr, ast.Lambda):
            return [LambdaV(self.module.name, expr, expr.lineno)]
        if isinstance(expr, ast.Name):
            if expr.id in self.params:
                return [self.params[expr.id]]
            for scope in reversed(self.local_defs):
                if expr.id in scope:
                    node = scope[expr.id]
                    return [FuncV(self.module.name, f"<local {expr.id}>", node)]
            return self.program.lookup(self.module, expr.id, seen)
        if isinstance(expr, ast.Attribute):
            out: list[Value] = []
            for base in self.resolve(expr.value, seen):
                out.extend(self.attribute(base, expr.attr, seen))
            return _unique(out)
        if (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name)
                and expr.func.id == "super" and self.cls is not None):
            return [SuperV(self.cls)]
        return []

    def attribute(self, base: Value, attr: str, seen: Seen) -> list[Value]:
        if isinstance(base, ModuleV):
            return self.program.module_attr(base.name, attr, seen)
        if isinstance(base, (ClassV, InstanceV)):
            cls = base if isinstance(base, ClassV) else base.cls
            return list(self.program.method(cls, attr))
        if isinstance(base, SuperV):
            return list(self.program.method(base.cls, attr, after=True))
        return []


# ---------------------------------------------------------------------------------------------
# Call sites of a body, with guards (R6, R7)


def _is_init_predicate(test: ast.expr) -> bool:
    """True for an expression that holds only once CUDA is initialised (R6)."""
    if (isinstance(test, ast.Call) and not test.args
            and ast.unparse(test.func) in ("is_initialized", "torch.cuda.is_initialized")):
        return True
    if isinstance(test, ast.Name) and test.id == "_initialized":
        return True
    if (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "hasattr"
            and len(test.args) == 2 and isinstance(test.args[1], ast.Constant)
            and test.args[1].value == "is_initializing"):
        return True
    if isinstance(test, ast.BoolOp):
        if isinstance(test.op, ast.Or):
            return all(_is_init_predicate(v) for v in test.values)
        return any(_is_init_predicate(v) for v in test.values)
    return False


def _negated(test: ast.expr) -> Optional[ast.expr]:
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test.operand
    return None


def _is_scripting(test: ast.expr) -> bool:
    """``torch.jit.is_scripting()``: False whenever Python runs the code (R6)."""
    return (isinstance(test, ast.Call) and not test.args
            and ast.unparse(test.func) in ("torch.jit.is_scripting", "is_scripting"))


def _param_conds(test: ast.expr, params: set[str], truth: bool) -> Optional[list[tuple[str, str, bool]]]:
    """What the parameters must be for ``test`` to have the value ``truth`` (R7).

    Returns a list of (parameter, "truth" or "none", required value), [] when something must hold
    that is not about parameters, or None when the test says nothing about parameters.
    """
    if isinstance(test, ast.Name) and test.id in params:
        return [(test.id, "truth", truth)]
    inner = _negated(test)
    if inner is not None:
        return _param_conds(inner, params, not truth)
    if (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name)
            and test.left.id in params and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value is None and isinstance(test.ops[0], (ast.Is, ast.IsNot))):
        is_none = isinstance(test.ops[0], ast.Is)
        return [(test.left.id, "none", truth if is_none else not truth)]
    if isinstance(test, ast.BoolOp):
        # and/True and or/False: every operand has that value; otherwise nothing is known.
        if isinstance(test.op, ast.And) == truth:
            found: list[tuple[str, str, bool]] = []
            any_param = False
            for value in test.values:
                sub = _param_conds(value, params, truth)
                if sub is not None:
                    any_param = True
                    found.extend(sub)
            return found if any_param else None
    return None


def _simple_param_test(test: ast.expr, params: set[str]) -> bool:
    inner = _negated(test)
    if inner is not None:
        return _simple_param_test(inner, params)
    conds = _param_conds(test, params, True)
    return bool(conds) and not isinstance(test, ast.BoolOp)


def _violates(conds: Conds, params: dict[str, Value]) -> bool:
    """Does a bound parameter value contradict one of ``conds``? (R7)"""
    for name, what, want in conds:
        value = params.get(name)
        if value is None:
            continue
        if isinstance(value, ConstV):
            actual = bool(value.value) if what == "truth" else value.value is None
        else:  # modules, functions, classes, lambdas: truthy, not None
            actual = what == "truth"
        if actual != want:
            return True
    return False


def _exits(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise))


def _note(test: ast.expr, truth: bool) -> str:
    inner = _negated(test)
    if inner is not None:
        test, truth = inner, not truth
    text = ast.unparse(test)
    key = text if truth else f"not {text}"
    if key in CONDITION_NOTES:
        return CONDITION_NOTES[key]
    return f"when {text}" if truth else f"unless {text}"


class Walker:
    """Collect the call sites of one body (a function, or a lambda's expression)."""

    def __init__(self, params: set[str]) -> None:
        self.params = params
        self.sites: list[CallSite] = []
        self.local_defs: dict[str, ast.AST] = {}

    def body(self, stmts: list[ast.stmt], conds: Conds, notes: tuple[str, ...]) -> None:
        for stmt in stmts:
            if isinstance(stmt, ast.If):
                if _is_init_predicate(stmt.test):
                    self.expr(stmt.test, conds, notes)
                    self.body(stmt.orelse, conds, notes)
                    continue
                inner = _negated(stmt.test)
                if inner is not None and _is_init_predicate(inner):
                    self.expr(stmt.test, conds, notes)
                    self.body(stmt.body, conds, notes)
                    if _exits(stmt.body):
                        return  # R6: the rest of the body runs only once initialised
                    continue
                self.expr(stmt.test, conds, notes)
                if _is_scripting(stmt.test):
                    self.body(stmt.orelse, conds, notes)
                    continue
                if inner is not None and _is_scripting(inner):
                    self.body(stmt.body, conds, notes)
                    if _exits(stmt.body):
                        return
                    continue
                for branch, truth in ((stmt.body, True), (stmt.orelse, False)):
                    self.body(branch, conds + self.conds(stmt.test, truth),
                              notes + self.note(stmt.test, truth))
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for deco in stmt.decorator_list:
                    self.expr(deco, conds, notes)
                self.local_defs[stmt.name] = stmt  # R5: its body runs only when called
            elif isinstance(stmt, ast.ClassDef):
                continue
            elif isinstance(stmt, (ast.With, ast.AsyncWith)):
                for item in stmt.items:
                    self.expr(item.context_expr, conds, notes)
                    if isinstance(item.context_expr, ast.Call):
                        self.sites.append(CallSite(item.context_expr.lineno, item.context_expr,
                                                   conds, notes, enter=True))
                self.body(stmt.body, conds, notes)
            else:
                for child_stmt_list in _stmt_lists(stmt):
                    self.body(child_stmt_list, conds, notes)
                for expr in _stmt_exprs(stmt):
                    self.expr(expr, conds, notes)

    def conds(self, test: ast.expr, truth: bool) -> Conds:
        return tuple(_param_conds(test, self.params, truth) or ())

    def note(self, test: ast.expr, truth: bool) -> tuple[str, ...]:
        return () if _simple_param_test(test, self.params) else (_note(test, truth),)

    def expr(self, node: ast.AST, conds: Conds, notes: tuple[str, ...]) -> None:
        if isinstance(node, ast.Lambda):
            return  # R5
        if isinstance(node, ast.IfExp):
            self.expr(node.test, conds, notes)
            if _is_init_predicate(node.test):
                self.expr(node.orelse, conds, notes)
                return
            if _is_scripting(node.test):
                self.expr(node.orelse, conds, notes)
                return
            inner = _negated(node.test)
            if inner is not None and _is_scripting(inner):
                self.expr(node.body, conds, notes)
                return
            for branch, truth in ((node.body, True), (node.orelse, False)):
                self.expr(branch, conds + self.conds(node.test, truth), notes + self.note(node.test, truth))
            return
        if isinstance(node, ast.Call):
            self.sites.append(CallSite(node.lineno, node, conds, notes))
        for child in ast.iter_child_nodes(node):
            self.expr(child, conds, notes)


def _stmt_lists(stmt: ast.stmt) -> list[list[ast.stmt]]:
    lists = []
    for name in ("body", "orelse", "finalbody"):
        value = getattr(stmt, name, None)
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            lists.append(value)
    for handler in getattr(stmt, "handlers", []) or []:
        lists.append(handler.body)
    for case in getattr(stmt, "cases", []) or []:
        lists.append(case.body)
    return lists


def _stmt_exprs(stmt: ast.stmt) -> list[ast.AST]:
    out: list[ast.AST] = []
    for name, value in ast.iter_fields(stmt):
        if name in ("body", "orelse", "finalbody", "handlers", "cases"):
            continue
        if isinstance(value, ast.AST):
            out.append(value)
        elif isinstance(value, list):
            out.extend(v for v in value if isinstance(v, ast.AST))
    return out


def _params(args: ast.arguments) -> list[ast.arg]:
    return list(args.posonlyargs) + list(args.args)


# ---------------------------------------------------------------------------------------------
# Reachability (R1-R7, R9)


class Analysis:
    def __init__(self, program: Program, kind: str) -> None:
        self.program = program
        self.kind = kind
        self.memo: dict[tuple[int, tuple[tuple[str, Value], ...], int], Optional[Witness]] = {}
        self.sites_cache: dict[int, tuple[list[CallSite], dict[str, ast.AST]]] = {}

    def seed(self, value: Value) -> Optional[Seed]:
        if self.kind == LAZY:
            if isinstance(value, FuncV) and (value.module, value.qualname) == ("torch.cuda", "_lazy_init"):
                return Seed("_lazy_init()", "")
            if isinstance(value, CFuncV) and value.name in C_LAZY_INIT:
                return Seed(f"torch._C.{value.name}()", C_LAZY_INIT[value.name][1])
        elif isinstance(value, CFuncV) and value.name in C_FORK:
            return Seed(f"torch._C.{value.name}()", C_FORK[value.name][1])
        return None

    def sites(self, node: ast.AST) -> tuple[list[CallSite], dict[str, ast.AST]]:
        key = id(node)
        if key not in self.sites_cache:
            if isinstance(node, ast.Lambda):
                walker = Walker({a.arg for a in _params(node.args)})
                walker.expr(node.body, (), ())
            else:
                assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                walker = Walker({a.arg for a in _params(node.args) + list(node.args.kwonlyargs)})
                walker.body(node.body, (), ())
            self.sites_cache[key] = (walker.sites, walker.local_defs)
        return self.sites_cache[key]

    # -- binding arguments to parameters (R7) --------------------------------------------------

    @staticmethod
    def _passable(values: list[Value]) -> Optional[Value]:
        if len(values) == 1 and not isinstance(values[0], InstanceV):
            return values[0]
        return None

    def bind(self, func: ast.AST, call: Optional[ast.Call], ctx: Optional[Context],
             first: Optional[Value], extra: tuple[Value, ...] = ()) -> dict[str, Value]:
        """Parameter values of ``func`` for a call (constants, modules, functions, lambdas)."""
        assert isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        args = func.args
        positional = _params(args)
        bound: dict[str, Value] = {}
        given: list[Optional[Value]] = []
        if first is not None:
            given.append(first)
        given.extend(extra)
        keywords: dict[str, Optional[Value]] = {}
        starred = False
        if call is not None and ctx is not None:
            for arg in call.args:
                if isinstance(arg, ast.Starred):
                    starred = True
                    break
                given.append(self._passable(ctx.resolve(arg)))
            for kw in call.keywords:
                if kw.arg is None:
                    starred = True
                else:
                    keywords[kw.arg] = self._passable(ctx.resolve(kw.value))
        for param, value in zip(positional, given):
            if value is not None:
                bound[param.arg] = value
        if not starred:
            defaults = dict(zip([p.arg for p in positional[len(positional) - len(args.defaults):]],
                                args.defaults))
            defaults.update({p.arg: d for p, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
            for index, param in enumerate(positional + list(args.kwonlyargs)):
                name = param.arg
                if name in bound or (index < len(given) and index < len(positional)):
                    continue
                if name in keywords:
                    if (keyword := keywords[name]) is not None:
                        bound[name] = keyword
                elif name in defaults and isinstance(default := defaults[name], ast.Constant):
                    bound[name] = ConstV(default.value)
        else:
            for name, value in keywords.items():
                if value is not None:
                    bound[name] = value
        return bound

    # -- the search -------------------------------------------------------------------------

    def targets(self, value: Value, site: CallSite, ctx: Context
                ) -> list[tuple[str, ast.AST, str, dict[str, Value], Optional[ClassV]]]:
        """Bodies a call of ``value`` runs: (display name, node, module, parameters, class)."""
        out = []
        if isinstance(value, FuncV):
            first: Optional[Value] = None
            if value.cls is not None and isinstance(value.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                cls = self._class(value)
                first = InstanceV(cls) if cls is not None else None
                if cls is not None and self._is_static(value.node):
                    first = None
                elif cls is not None and self._is_classmethod(value.node):
                    first = cls
            out.append((self.display(value), value.node, value.module,
                        self.bind(value.node, site.call, ctx, first), self._class(value)))
        elif isinstance(value, LambdaV):
            out.append(("<lambda>", value.node, value.module,
                        self.bind(value.node, site.call, ctx, None), None))
        elif isinstance(value, ClassV):
            names = ["__new__", "__init__"] + (["__enter__", "__exit__"] if site.enter else [])
            for name in names:
                for method in self.program.method(value, name):
                    first = value if name == "__new__" else InstanceV(value)
                    call = site.call if name in ("__new__", "__init__") else None
                    out.append((f"{self.display(value)}.{name}", method.node, method.module,
                                self.bind(method.node, call, ctx, first), self._class(method)))
        return out

    def _class(self, func: FuncV) -> Optional[ClassV]:
        if func.cls is None:
            return None
        module = self.program.modules[func.module]
        for value in self.program.lookup(module, func.cls.split(".")[0]):
            if isinstance(value, ClassV):
                return value
        return None

    @staticmethod
    def _is_static(node: ast.AST) -> bool:
        decos = getattr(node, "decorator_list", [])
        return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in decos)

    @staticmethod
    def _is_classmethod(node: ast.AST) -> bool:
        decos = getattr(node, "decorator_list", [])
        if getattr(node, "name", "") == "__new__":
            return True
        return any(isinstance(d, ast.Name) and d.id == "classmethod" for d in decos)

    def display(self, value: Union[FuncV, ClassV]) -> str:
        """``current_device``, ``memory.memory_stats``, ``torch._utils._get_device_index``."""
        name = value.qualname.replace("<local ", "").replace(">", "")
        if value.module == "torch.cuda":
            return name
        if value.module.startswith("torch.cuda."):
            return f"{value.module[len('torch.cuda.'):]}.{name}"
        return f"{value.module}.{name}"

    def reach(self, node: ast.AST, module: str, params: dict[str, Value], cls: Optional[ClassV],
              depth: int, outer_defs: tuple[dict[str, ast.AST], ...] = ()) -> Optional[Witness]:
        """The shortest witness (at most ``depth`` hops) that running ``node`` reaches a seed."""
        key = (id(node), tuple(sorted(params.items(), key=lambda kv: kv[0])), depth)
        if key in self.memo:
            return self.memo[key]
        self.memo[key] = None
        sites, local_defs = self.sites(node)
        mod = self.program.modules[module]
        ctx = Context(self.program, mod, params, outer_defs + (local_defs,), cls)
        best: Optional[Witness] = None
        for site in sites:
            if _violates(site.conds, params):
                continue  # R7
            for value in ctx.resolve(site.call.func):
                hop_name = self._hop_name(value, site.call.func)
                if site.enter:
                    hop_name = f"with {hop_name[:-2]}(...)"
                seed = None if site.enter else self.seed(value)
                if seed is not None:
                    witness: Witness = ((Hop(mod.path, site.line, hop_name, site.notes),), seed)
                elif depth > 1:
                    found = None
                    for _name, body, body_module, body_params, body_cls in self.targets(value, site, ctx):
                        defs = ctx.local_defs if body_module == module else ()
                        sub = self.reach(body, body_module, body_params, body_cls, depth - 1, defs)
                        if sub is not None and (found is None or rank(sub) < rank(found)):
                            found = sub
                    if found is None:
                        continue
                    witness = ((Hop(mod.path, site.line, hop_name, site.notes),) + found[0], found[1])
                else:
                    continue
                if best is None or rank(witness) < rank(best):
                    best = witness
        self.memo[key] = best
        return best

    def _hop_name(self, value: Value, func: ast.expr) -> str:
        if isinstance(value, (FuncV, ClassV)):
            return self.display(value) + "()"
        if isinstance(value, CFuncV):
            return f"torch._C.{value.name}()"
        if isinstance(value, LambdaV):
            return "<lambda>()"
        return ast.unparse(func) + "()"

    def entry(self, values: list[Union[FuncV, ClassV]]) -> Optional[Witness]:
        """Does calling a public function or class (any of its definitions) reach a seed? (R4, R9)"""
        best: Optional[Witness] = None
        bodies: list[tuple[ast.AST, str, Optional[ClassV]]] = []
        for value in values:
            if isinstance(value, FuncV):
                bodies.append((value.node, value.module, None))
            else:
                bodies.extend((m.node, m.module, self._class(m))
                              for name in ("__new__", "__init__") for m in self.program.method(value, name))
        for body, module, cls in bodies:
            first: dict[str, Value] = {}
            if cls is not None:
                assert isinstance(body, (ast.FunctionDef, ast.AsyncFunctionDef))
                params = _params(body.args)
                if params:
                    first[params[0].arg] = cls if body.name == "__new__" else InstanceV(cls)
            found = self.reach(body, module, first, cls, MAX_DEPTH)
            if found is not None and (best is None or rank(found) < rank(best)):
                best = found
        return best


# ---------------------------------------------------------------------------------------------
# Entries and output


@dataclass
class Entry:
    key: str
    witness: Witness
    is_class: bool

    def location(self) -> str:
        hop = self.witness[0][0]
        return f"{hop.path}:{hop.line}"


def public_entries(program: Program) -> dict[str, list[Union[FuncV, ClassV]]]:
    """R8: every public name a user can call, mapped to its definitions (several for @overload)."""
    out: dict[str, list[Union[FuncV, ClassV]]] = {}

    def defs(module: Module, name: str) -> list[Union[FuncV, ClassV]]:
        return [v for v in program.lookup(module, name)
                if isinstance(v, (FuncV, ClassV)) and v.module.startswith("torch.cuda")]

    top = program.modules["torch.cuda"]
    names = set(top.bindings) | set(top.all_names or [])
    for star in top.star:
        if star in program.modules:
            names |= set(program.exported(program.modules[star]))
    for name in sorted(n for n in names if not n.startswith("_")):
        found = defs(top, name)
        if found:
            out[f"torch.cuda.{name}"] = found
            home = found[0]
            if home.module != "torch.cuda" and not _private(home.module):
                out[f"{home.module}.{home.qualname}"] = found
    for mod_name, module in program.modules.items():
        if mod_name == "torch.cuda" or not mod_name.startswith("torch.cuda.") or _private(mod_name):
            continue
        for name in program.exported(module):
            if name.startswith("_"):
                continue
            found = defs(module, name)
            # without __all__, only what the module defines itself (not what it imports)
            if module.all_names is None:
                found = [v for v in found if v.module == mod_name]
            if found:
                out[f"{mod_name}.{name}"] = found
    return out


def _private(module: str) -> bool:
    return any(part.startswith("_") for part in module.split("."))


def derive(source: Source) -> dict[str, list[Entry]]:
    program = Program(source)
    entries = public_entries(program)
    result: dict[str, list[Entry]] = {LAZY: [], DRIVER: []}
    lazy_keys: set[str] = set()
    for kind in (LAZY, DRIVER):
        analysis = Analysis(program, kind)
        for key in sorted(entries):
            if kind == DRIVER and key in lazy_keys:
                continue
            values = entries[key]
            witness = analysis.entry(values)
            if witness is not None:
                result[kind].append(Entry(key, witness, all(isinstance(v, ClassV) for v in values)))
                if kind == LAZY:
                    lazy_keys.add(key)
    return result


def public_version(version: str) -> str:
    return version.split("+")[0]


def chain(entry: Entry, full: bool) -> str:
    """``torch/cuda/memory.py:122 calls current_device(), which calls _lazy_init()`` (R9).

    The short form (for the preset) names the first hop and the last function before the seed; the
    full form (``--markdown``) every function on the way.
    """
    hops, seed = entry.witness
    first = hops[0]
    where = f"{first.path}:{first.line}"
    verb = "enters" if first.callee.startswith("with ") else "calls"
    if len(hops) == 1:
        text = f"{where} {verb} {first.callee}"
    elif len(hops) == 2:
        text = f"{where} {verb} {first.callee}, which calls {hops[1].callee}"
    else:
        middle = [h.callee.removesuffix("()") for h in hops[1:-1]]
        via = " -> ".join(middle) if full else f"{middle[-1]}()"
        text = f"{where} {verb} {first.callee}, which reaches {hops[-1].callee} via {via}"
    if seed.why:
        text += f", {seed.why}"
    # conditions: those on the cited line, and the known ones (CONDITION_NOTES) further down
    notes = list(first.notes)
    for hop in hops[1:]:
        notes.extend(n for n in hop.notes if n in CONDITION_NOTES.values() and n not in notes)
    if notes:
        text += f"; {', '.join(notes)}"
    return text


def reason(entry: Entry, kind: str, version: str) -> str:
    constructing = "constructing it " if entry.is_class else ""
    if kind == LAZY:
        head = f"{constructing}initialises CUDA in this process"
    else:
        head = (f"{constructing}registers torch's CUDA fork handler: a process forked afterwards cannot "
                f"use CUDA")
    return f"{head} (torch {public_version(version)}: {chain(entry, full=False)})"


def toml_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def render(kind: str, entries: list[Entry], source: Source, version: str, command: str) -> str:
    out = io.StringIO()
    title = {
        LAZY: "Calls that initialise CUDA (torch.cuda._lazy_init) in the calling process.",
        DRIVER: ("Opt-in: calls that, without torch's lazy init, register torch's at-fork handler "
                 "(and, for device counts, initialise the CUDA driver), so a later fork is unsafe."),
    }[kind]
    out.write(f"# Built-in preset {kind!r}: {title}\n")
    out.write(f"# Generated by: {command}\n")
    out.write(f"# From torch {version} ({source.label}")
    out.write(f", sha256 {source.sha256})\n" if source.sha256 else ")\n")
    out.write("# Do not edit: re-run the command; the rules are in tools/derive_torch_cuda.py.\n")
    out.write(f"# {len(entries)} entries.\n\n")
    out.write("[heavy-calls]\n")
    for entry in sorted(entries, key=lambda e: e.key):
        text = reason(entry, kind, version)
        environ = [pair for note, pairs in CONDITION_ENVIRON.items() if note in text for pair in pairs]
        if environ:
            unless = ", ".join(f"{toml_string(k)} = {toml_string(v)}" for k, v in sorted(environ))
            out.write(f"{toml_string(entry.key)} = {{ reason = {toml_string(text)}, "
                      f"unless-environ = {{ {unless} }} }}\n")
        else:
            out.write(f"{toml_string(entry.key)} = {toml_string(text)}\n")
    return out.getvalue()


def markdown(result: dict[str, list[Entry]], version: str) -> str:
    lines = []
    for kind in (LAZY, DRIVER):
        lines.append(f"### `{kind}` ({len(result[kind])} entries, torch {version})\n")
        lines.append("| entry | file:line | call chain |")
        lines.append("| --- | --- | --- |")
        for entry in sorted(result[kind], key=lambda e: e.key):
            what = "constructing it: " if entry.is_class else ""
            why = what + chain(entry, full=True).split(" ", 1)[1].replace("|", "\\|")
            lines.append(f"| `{entry.key}` | `{entry.location()}` | {why} |")
        lines.append("")
    return "\n".join(lines)


def body_lines(text: str) -> list[str]:
    """The lines --check compares: everything but the header comments (the source may differ)."""
    return [line for line in text.splitlines() if not line.startswith("#")]


def open_source(args: argparse.Namespace) -> Source:
    if args.wheel:
        return WheelSource(Path(args.wheel))
    if args.torch_dir:
        return DirSource(Path(args.torch_dir))
    return WheelSource(download_wheel(args.version))


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--wheel", help="a torch wheel file")
    group.add_argument("--torch-dir", help="an installed torch package directory (…/site-packages/torch)")
    parser.add_argument("--version", default=DEFAULT_VERSION,
                        help=f"torch version to download when neither is given (default {DEFAULT_VERSION})")
    parser.add_argument("--output-dir", default=str(PRESETS), help="where the preset files are")
    parser.add_argument("--check", action="store_true",
                        help="compare with the files in --output-dir; exit 1 with a diff when they differ")
    parser.add_argument("--markdown", action="store_true", help="print the entries as Markdown tables")
    args = parser.parse_args(argv)

    source = open_source(args)
    version = source.version()
    result = derive(source)
    if args.markdown:
        print(markdown(result, public_version(version)))
        return 0
    command = f"python tools/derive_torch_cuda.py --version {public_version(version)}"
    out_dir = Path(args.output_dir)
    status = 0
    for kind in (LAZY, DRIVER):
        text = render(kind, result[kind], source, version, command)
        path = out_dir / f"{kind}.toml"
        if args.check:
            old = path.read_text(encoding="utf-8") if path.is_file() else ""
            if body_lines(old) != body_lines(text):
                status = 1
                sys.stdout.writelines(difflib.unified_diff(
                    old.splitlines(True), text.splitlines(True), str(path), f"derived from {source.label}"))
            else:
                print(f"{path.name}: up to date ({len(result[kind])} entries)")
        else:
            out_dir.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path} ({len(result[kind])} entries)")
    return status


if __name__ == "__main__":
    sys.exit(main())
