"""Differential benchmark: the engine's predicted import-time closure against what CPython executes.

Usage::

    .venv/bin/python benchmarks/differential.py [--packages a,b] [--json FILE] [--show-misses N]
        [--requirements FILE] [--importpolicy PATH] [--python BASE] [--timeout S] [--first-party]

The packages of ``benchmarks/differential-requirements.txt`` (``name==version``, with
``# import: a, b`` when the module names differ from the distribution name) are installed, with
their dependencies, into a venv made once under ``<bench cache>/differential/<hash>/`` (see
``fetch.cache_root``; the hash is that of the pins, so changing one makes a new venv). Nothing is
written into the repository. Then, for each import name X:

- **executed** (the oracle): a fresh ``<venv python> -I -c ...`` records ``set(sys.modules)``
  before and after ``import X``; of the new entries, the modules whose ``__file__`` is a ``.py``
  under the venv's site-packages. An entry whose key is not its module's ``__name__`` (requests'
  ``sys.modules['requests.packages.urllib3'] = urllib3``) is an **alias**: counted apart, never a
  miss. A module made lazy by ``importlib.util.LazyLoader`` has not run and is left out.
- **predicted**: ``importpolicy why X --policy P --format json --no-cache`` with a temporary policy
  (``interpreter`` = the venv's python, ``external = "follow"``, an empty source root, one
  ``[light."X"]``): the whole predicted closure, of which the ``.py`` modules under site-packages.
- A second, traced run of the oracle (a ``sys.meta_path`` finder placed first that wraps loaders)
  tells for each executed module who imported it: the innermost frame outside importlib (module,
  file, line), the module whose import-time code was running (``parent``; also right for imports
  made by extension modules, e.g. mypyc-compiled ones, which have no Python frame) and a short
  stack. The executed set always comes from the untraced run; if the traced run's differs, the
  difference is reported (``traced_diff``).

A prediction is **definite** when no hop of its chain is flagged ``guarded``, ``conditional`` or
``fallback``: the engine says those run, and only may run otherwise (both branches of a condition
it cannot evaluate, a fallback, an import in a ``try``). **precision** is over the definite
predictions; **precision (all)** over every prediction, what may run included.

Numbers, per import name (one table row each): **executed** and **predicted** count the ``.py``
modules under site-packages, **hits** those in both; **recall** = hits / executed (how much of what
runs the engine saw), **precision** = definite hits / definite predictions (how much of what it said
runs does run); the **micro** recall and precision sum the counts over all rows. A **miss** is
executed but not predicted; an **extra** is predicted but not executed. A miss is downstream of its
nearest missed ancestor by ``parent`` (looking through modules that are not counted: extension
modules, the standard library); with none, of its nearest missed package (no submodule is predicted
without its package), else of a missed module whose code is on its importing stack (a method of a
class that module defines, a PEP 562 ``__getattr__`` it bound: code the engine never read); a miss
with none is a **root miss**: the construct to classify is at
its import site (``--show-misses`` prints roots first, with importer, line and source). An extra's
root is the first extra on its predicted chain, shown with the statement that the prediction
followed. A miss is **silent** when the engine reported nothing it could not resolve near it:
``importpolicy check --format json`` of the same light module lists no IPL006 site in the module
whose code imported it (the traced importing frame, or a frame further out on its stack, a helper
called through a variable) nor in the module whose import was running, nor one that names the missed
module itself (``not-installed``: path search does not find it, reported once, at the first import
the engine reached), and no IPL005 problem in their files; a miss downstream of a root miss is
silent when its root is. "Zero silent misses" (issue 29) means every miss is at or behind a site the
user was told about. Extras whose code did start in the traced run but raised (a ``try: from .http2
import ...`` whose own imports fail) left ``sys.modules``; they are counted as extras and reported
apart. ``why s`` is the wall time of the ``why`` run (cold: ``--no-cache``). ``--first-party`` is an
experiment: the venv's site-packages becomes the policy's source root, so that the rules applied to
first-party code only (import-time calls into other modules, PEP 562 triggers) apply to every
package.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import linecache
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fetch import cache_root  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
REQUIREMENTS = Path(__file__).resolve().parent / "differential-requirements.txt"
ML_REQUIREMENTS = Path(__file__).resolve().parent / "differential-ml-requirements.txt"
"""The ML environment (issue 25): torch, transformers and friends installed together."""
MARKER = ".differential-venv-complete"

# The oracle: ``python -I -c ORACLE OUT MODULE TRACE``. Standard library only, nothing imported before
# the measured import except what start-up loaded; the result goes to the file OUT as JSON (stdout
# belongs to the imported code). With TRACE == "1", a finder first on sys.meta_path wraps each loader
# to know which module's code is running, and notes the importing frame of every module it finds.
ORACLE = r'''
import sys
OUT, TARGET, TRACE = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
_G = globals()
_SKIP = ("importlib", "importlib.util", "importlib._bootstrap", "importlib._bootstrap_external")
IMPORTERS = {}
STACK = []
STARTED = {}


def _skipped(frame):
    if frame.f_globals is _G:
        return frame.f_code.co_name != "<module>"
    if frame.f_code.co_filename.startswith("<frozen importlib"):
        return True
    return frame.f_globals.get("__name__") in _SKIP


def _where(frame):
    return [frame.f_globals.get("__name__"), frame.f_code.co_filename, frame.f_lineno or 0,
            frame.f_code.co_name]


class _Loader:
    def __init__(self, loader):
        self._ipl_loader = loader

    def __getattr__(self, name):
        if name.startswith("_ipl_"):
            raise AttributeError(name)
        return getattr(self._ipl_loader, name)

    def create_module(self, spec):
        create = getattr(self._ipl_loader, "create_module", None)
        if create is None:
            return None
        STACK.append(spec.name)
        STARTED.setdefault(spec.name, spec.origin)
        try:
            return create(spec)
        finally:
            STACK.pop()

    def exec_module(self, module):
        spec = module.__dict__.get("__spec__")
        if spec is not None and spec.loader is self:
            spec.loader = self._ipl_loader
        if module.__dict__.get("__loader__") is self:
            module.__loader__ = self._ipl_loader
        name = spec.name if spec is not None else module.__dict__.get("__name__")
        STACK.append(name)
        STARTED.setdefault(name, module.__dict__.get("__file__"))
        try:
            self._ipl_loader.exec_module(module)
        finally:
            STACK.pop()


class _Finder:
    def find_spec(self, name, path=None, target=None):
        if name not in IMPORTERS:
            frames = []
            frame = sys._getframe(1)
            while frame is not None and len(frames) < 6:
                if not _skipped(frame):
                    frames.append(_where(frame))
                frame = frame.f_back
            IMPORTERS[name] = {"parent": STACK[-1] if STACK else None, "frames": frames}
        spec = None
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        if not isinstance(spec.loader, _Loader):
            spec.loader = _Loader(spec.loader)
        return spec

    def invalidate_caches(self):
        return None


before = set(sys.modules)
if TRACE:
    sys.meta_path.insert(0, _Finder())
error = None
try:
    __import__(TARGET)
except BaseException as exc:
    error = type(exc).__name__ + ": " + str(exc)
after = list(sys.modules.items())
if TRACE:
    del sys.meta_path[0]
lazy_type = getattr(sys.modules.get("importlib.util"), "_LazyModule", None)
modules, lazy, other = [], [], []
for key, module in after:
    if key in before:
        continue
    if lazy_type is not None and type(module) is lazy_type:
        lazy.append(key)
        continue
    try:
        namespace = object.__getattribute__(module, "__dict__")
    except BaseException:
        other.append(key)
        continue
    name = namespace.get("__name__")
    path = namespace.get("__file__")
    modules.append([key, name if isinstance(name, str) else None, path if isinstance(path, str) else None])
import json
with open(OUT, "w") as handle:
    json.dump({"error": error, "modules": modules, "lazy": lazy, "other": other,
               "importers": IMPORTERS,
               "failed": [[k, v] for k, v in STARTED.items() if k not in sys.modules]}, handle)
'''

SITE_QUERY = (
    "import json, sys, sysconfig; "
    "print(json.dumps([sysconfig.get_paths()[k] for k in ('purelib', 'platlib')] + [sys.version]))"
)


# -- requirements and the venv -------------------------------------------------------------------


@dataclass(frozen=True)
class Requirement:
    name: str
    version: str
    imports: tuple[str, ...]
    beyond: tuple[str, ...] = ()


def parse_requirements(path: Path) -> list[Requirement]:
    out: list[Requirement] = []
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        spec, _, comment = raw.partition("#")
        spec = spec.strip()
        if not spec:
            continue
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", spec)
        if match is None:
            raise SystemExit(f"{path}:{number}: expected name==version, got {spec!r}")
        name, version = match.groups()
        imports: tuple[str, ...] = (re.sub(r"[-.]", "_", name).lower(),)
        comment, _, beyond_text = comment.partition(";")
        found = re.match(r"\s*import:\s*(.+)", comment)
        if found:
            imports = tuple(part.strip() for part in found.group(1).split(",") if part.strip())
        beyond = re.match(r"\s*beyond:\s*(.+)", beyond_text)
        extra = tuple(p.strip() for p in beyond.group(1).split(",") if p.strip()) if beyond else ()
        out.append(Requirement(name, version, imports, extra))
    return out


def venv_python(requirements: Path, base_python: str) -> Path:
    """The venv holding the requirements (made and filled once, keyed by the hash of the pins)."""
    pins = sorted(f"{r.name.lower()}=={r.version}" for r in parse_requirements(requirements))
    digest = hashlib.sha256("\n".join(pins).encode()).hexdigest()[:12]
    venv = cache_root() / "differential" / digest
    python = venv / "bin" / "python"
    if (venv / MARKER).is_file():
        return python
    if venv.exists():
        shutil.rmtree(venv)  # a half-made venv of an earlier, interrupted run
    print(f"[differential] making {venv} (pip install -r {requirements})", file=sys.stderr)
    subprocess.run([base_python, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_REQUIRE_VIRTUALENV")}
    pip = [str(python), "-m", "pip", "install", "-q", "--only-binary=:all:"]
    # A pin with a local version (``torch==2.13.0+cpu``) is installed first and alone, so that pip
    # takes that build and never resolves another (a CUDA one, with its nvidia-* wheels) for
    # another package's range.
    local = [f"{r.name}=={r.version}" for r in parse_requirements(requirements) if "+" in r.version]
    if local:
        subprocess.run(pip + local, check=True, env=env)
    subprocess.run(pip + ["-r", str(requirements)], check=True, env=env)
    freeze = subprocess.run([str(python), "-m", "pip", "freeze", "--all"], check=True,
                            capture_output=True, text=True, env=env).stdout
    frozen = set(freeze.splitlines())
    wrong = [pin for pin in local if pin not in frozen]
    if any(pin.endswith("+cpu") for pin in local):
        wrong += [line for line in frozen if line.lower().startswith("nvidia-")]
    if wrong:
        shutil.rmtree(venv)
        raise SystemExit(
            f"[differential] {venv}: not the pinned builds ({', '.join(sorted(wrong))}); removed"
        )
    (venv / MARKER).write_text(freeze)
    return python


def installed_versions(python: Path) -> dict[str, str]:
    freeze = (python.parent.parent / MARKER).read_text()
    out: dict[str, str] = {}
    for line in freeze.splitlines():
        name, sep, version = line.partition("==")
        if sep:
            out[re.sub(r"[-_.]+", "-", name).lower()] = version
    return out


def site_dirs(python: Path) -> tuple[list[str], str]:
    """The venv's site-packages directories (real paths) and its ``sys.version``."""
    proc = subprocess.run([str(python), "-I", "-c", SITE_QUERY], check=True, capture_output=True,
                          text=True)
    *paths, version = json.loads(proc.stdout)
    return sorted({os.path.realpath(p) for p in paths}), version


def in_site(path: Optional[str], sites: Sequence[str]) -> Optional[str]:
    """The real path of ``path`` when it is a ``.py`` file under one of ``sites``, else None. A
    mypyc-compiled extension module counts as the ``.py`` source beside it (what the engine
    analyses; mypyc keeps a ``<hash>__mypyc`` runtime library at the top of the site)."""
    if not path:
        return None
    real = os.path.realpath(path)
    site = next((s for s in sites if real.startswith(s + os.sep)), None)
    if site is None:
        return None
    if real.endswith(".py"):
        return real
    directory, name = os.path.split(real)
    twin = os.path.join(directory, name.split(".", 1)[0] + ".py")
    if name.endswith((".so", ".pyd")) and os.path.isfile(twin) and _mypyc_site(site):
        return twin
    return None


_MYPYC: dict[str, bool] = {}


def _mypyc_site(site: str) -> bool:
    if site not in _MYPYC:
        _MYPYC[site] = any("__mypyc." in entry for entry in os.listdir(site))
    return _MYPYC[site]


# -- oracle and prediction -----------------------------------------------------------------------


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("PYTHON") or k == "PYTHONHASHSEED"}


def run_oracle(python: Path, module: str, trace: bool, timeout: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ipl-oracle-") as work:
        out = Path(work) / "out.json"
        proc = subprocess.run(
            [str(python), "-I", "-c", ORACLE, str(out), module, "1" if trace else "0"],
            cwd=work, env=clean_env(), capture_output=True, text=True, timeout=timeout,
        )
        if not out.is_file():
            raise RuntimeError(f"oracle for {module} wrote nothing (exit {proc.returncode}):\n"
                               f"{proc.stderr[-2000:]}")
        data: dict[str, Any] = json.loads(out.read_text())
        return data


@dataclass
class Executed:
    modules: dict[str, str]  # name -> real path (.py under site-packages)
    aliases: dict[str, str]  # sys.modules key -> the module's __name__
    lazy: list[str]
    error: Optional[str]


def executed_modules(data: dict[str, Any], sites: Sequence[str]) -> Executed:
    modules: dict[str, str] = {}
    aliases: dict[str, str] = {}
    for key, name, path in data["modules"]:
        real = in_site(path, sites)
        if real is None:
            continue
        if name != key:
            aliases[key] = name or "?"
        else:
            modules[key] = real
    return Executed(modules, aliases, list(data["lazy"]), data["error"])


def policy_toml(python: Path, roots: Sequence[str], module: str, call_depth: Optional[int] = None) -> str:
    return "\n".join([
        "version = 1",
        "",
        "[settings]",
        f"interpreter = {json.dumps(str(python))}",
        'external = "follow"',
        *([f"call-depth = {call_depth}"] if call_depth is not None else []),
        f"source-roots = [{', '.join(json.dumps(root) for root in roots)}]",
        "",
        f"[light.{json.dumps(module)}]",
        'reason = "differential benchmark: the whole predicted import-time closure"',
        "",
    ])


@dataclass
class Prediction:
    modules: dict[str, str]  # name -> real path (.py under site-packages)
    total: int  # every module of the predicted closure (stdlib, extensions, ...; functions not)
    wall: float
    error: Optional[str]
    chains: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # name -> why's chain
    # Modules with a site the engine reported it could not resolve (IPL006) and files it could not
    # analyse (IPL005), from ``check --format json`` of the same light module.
    announced: set[str] = field(default_factory=set)
    unresolved: int = 0  # IPL006 sites of the closure, as ``why --format json`` lists them


def predict(importpolicy: str, python: Path, module: str, sites: Sequence[str],
            timeout: float, first_party: bool = False, call_depth: Optional[int] = None) -> Prediction:
    with tempfile.TemporaryDirectory(prefix="ipl-differential-") as work:
        base = Path(work)
        (base / "empty-root").mkdir()
        policy = base / "policy.toml"
        policy.write_text(policy_toml(python, list(sites) if first_party else ["empty-root"], module,
                                      call_depth))
        argv = [importpolicy, "why", module, "--policy", str(policy), "--format", "json", "--no-cache"]
        t0 = time.perf_counter()
        proc = subprocess.run(argv, cwd=work, env=clean_env(), capture_output=True, text=True,
                              timeout=timeout)
        wall = time.perf_counter() - t0
        try:
            data = json.loads(proc.stdout)
        except ValueError:
            return Prediction({}, 0, wall, f"exit {proc.returncode}: {proc.stderr.strip()[-1000:]}")
        # ``module:qualname`` entries are functions called at import time, not modules.
        entries = [e for e in data.get("modules", []) if ":" not in e["module"]]
        modules: dict[str, str] = {}
        chains: dict[str, list[dict[str, Any]]] = {}
        for entry in entries:
            path = entry.get("path")
            real = in_site(str(base / path) if path else None, sites)
            if real is not None:
                modules[entry["module"]] = real
                chains[entry["module"]] = [
                    {**hop, "path": short(str(base / hop["path"]), sites) if hop.get("path") else None,
                     "abspath": str(base / hop["path"]) if hop.get("path") else None}
                    for hop in entry.get("chain", [])
                ]
        error = None if proc.returncode == 0 else f"exit {proc.returncode}: {proc.stderr.strip()[-500:]}"
        # What the engine says it could not resolve on the way (IPL006, IPL005): ``check`` of the
        # same light module, whose JSON lists every site (the text report groups them).
        check = subprocess.run([importpolicy, "check", "--policy", str(policy), "--format", "json",
                                "--no-cache"], cwd=work, env=clean_env(), capture_output=True,
                               text=True, timeout=timeout)
        try:
            report = json.loads(check.stdout)
        except ValueError:
            report = {}
            error = error or f"check exit {check.returncode}: {check.stderr.strip()[-500:]}"
        announced = {site["module"].partition(":")[0] for site in report.get("unresolved", ())
                     if site.get("module")}
        announced |= {str(Path(work, problem["path"]).resolve()) for problem in report.get("problems", ())
                      if problem.get("path")}
        return Prediction(modules, len(entries), wall, error, chains, announced,
                          len(data.get("unresolved", [])))


# -- comparison ----------------------------------------------------------------------------------


def source_line(path: Optional[str], line: int) -> str:
    if not path or line <= 0:
        return ""
    return linecache.getline(path, line).strip()


def short(path: Optional[str], sites: Sequence[str]) -> str:
    if not path:
        return "?"
    real = os.path.realpath(path)
    for site in sites:
        if real.startswith(site + os.sep):
            return real[len(site) + 1:]
    return path


@dataclass
class Row:
    package: str
    version: str
    module: str
    executed: Executed
    prediction: Prediction
    importers: dict[str, Any]
    files: dict[str, Optional[str]]  # every new sys.modules entry of the traced run -> __file__
    failed: set[str]  # modules whose code started in the traced run and that are not in sys.modules
    traced_diff: list[str]
    misses: list[dict[str, Any]] = field(default_factory=list)
    extras: list[dict[str, Any]] = field(default_factory=list)

    @property
    def hits(self) -> int:
        return len(set(self.executed.modules) & set(self.prediction.modules))

    @property
    def recall(self) -> float:
        return self.hits / len(self.executed.modules) if self.executed.modules else 1.0

    @property
    def precision_all(self) -> float:
        return self.hits / len(self.prediction.modules) if self.prediction.modules else 1.0

    @property
    def definite(self) -> set[str]:
        """Predicted modules whose chain has no hop that may not run (guarded, conditional,
        fallback): the engine says these run, not that they may."""
        return {name for name in self.prediction.modules
                if not any(set(hop.get("flags", ())) & MAYBE for hop in self.prediction.chains[name])}

    @property
    def definite_hits(self) -> int:
        return len(self.definite & set(self.executed.modules))

    @property
    def precision(self) -> float:
        definite = self.definite
        return self.definite_hits / len(definite) if definite else 1.0

    @property
    def root_misses(self) -> int:
        return sum(1 for miss in self.misses if miss["root"] == miss["module"])

    @property
    def silent_misses(self) -> int:
        """Misses at or behind no site the engine reported (IPL006/IPL005): ``check`` said OK blind."""
        return sum(1 for miss in self.misses if not miss["announced"])

    @property
    def failed_extras(self) -> int:
        """Extras whose code did start, but whose import raised (so they left ``sys.modules``)."""
        return sum(1 for extra in self.extras if extra["ran_and_failed"])

    @property
    def root_extras(self) -> int:
        return sum(1 for extra in self.extras if extra["root"] == extra["module"])

    @property
    def label(self) -> str:
        normal = re.sub(r"[-.]", "_", self.package).lower()
        return self.package if self.module == normal else f"{self.package} [{self.module}]"


def importer_of(name: str, importers: dict[str, Any], files: dict[str, Optional[str]],
                sites: Sequence[str]) -> dict[str, Any]:
    """Who imported ``name``, from the traced run: innermost frame, parent module, short stack.

    ``parent_kind`` is ``"extension"`` when the module whose code was running is not Python source
    (an extension module, e.g. mypyc-compiled): the import came from its compiled code, so the
    innermost Python frame (``by``) is only the frame that imported the extension, or ``None`` when
    that is the oracle's own ``import``.
    """
    info = importers.get(name)
    if info is None:
        return {"by": None, "at": None, "line": 0, "function": None, "source": "", "parent": None,
                "parent_kind": None, "stack": []}
    frames: list[list[Any]] = info["frames"]
    first: list[Any] = frames[0] if frames else [None, None, 0, None]
    by, path, line, function = first
    parent = info["parent"]
    parent_file = files.get(parent) if parent else None
    parent_kind = None
    if parent_file and not parent_file.endswith(".py"):
        parent_kind = "extension"
    if by == "__main__" and parent is not None:
        by, path, line, function = None, None, 0, None
    return {
        "by": by, "at": short(path, sites) if path else None, "line": line, "function": function,
        "source": source_line(path, line), "parent": parent, "parent_kind": parent_kind,
        "stack": [f"{m}:{f}:{n}" for m, _, n, f in frames[1:]],
    }


def compare(row: Row, sites: Sequence[str]) -> None:
    executed, predicted = row.executed.modules, row.prediction.modules
    missed = sorted(set(executed) - set(predicted))
    for name in missed:
        entry = {"module": name, "file": short(executed[name], sites)}
        entry.update(importer_of(name, row.importers, row.files, sites))
        row.misses.append(entry)
    # The root of a miss: its nearest ancestor (by ``parent``, through modules that are not counted:
    # extension modules, the standard library) that is not itself a miss (cycle-safe).
    missed_set = set(missed)
    for miss in row.misses:
        root, current, seen = miss["module"], miss["module"], {miss["module"]}
        while True:
            parent = row.importers.get(current, {}).get("parent")
            if parent is None or parent in seen:
                break
            seen.add(parent)
            current = parent
            if parent in missed_set:
                root = parent
            elif parent in executed:
                break
        if root == miss["module"]:
            # No missed ancestor by ``parent``: a missed package of it (the engine predicts no
            # submodule without its package), else a missed module whose code is on the importing
            # stack (a method of a class it defines, a PEP 562 hook it bound): what that code
            # imports is behind the miss of the module the engine never read.
            root = next(
                (p for p in _packages_of(miss["module"]) if p in missed_set),
                next((m for m in _stack_modules(miss) if m in missed_set and m != root), root),
            )
        miss["root"] = root
    # Roots through packages and stacks can chain (a miss behind a miss behind a root): follow
    # each root to the end, cycle-safe.
    by_root = {miss["module"]: miss["root"] for miss in row.misses}
    for miss in row.misses:
        root, seen = miss["root"], {miss["module"]}
        while by_root.get(root, root) != root and root not in seen:
            seen.add(root)
            root = by_root[root]
        miss["root"] = root
    # A miss is announced (not silent) when its root was imported by code of a module with an
    # IPL006 site, or a file with an IPL005 problem: the importing frame's module, the module whose
    # import-time code was running, or a frame further out on the importing stack (a helper
    # called through a variable). A miss downstream of a root is announced with it.
    announced = row.prediction.announced
    by_module = {miss["module"]: miss for miss in row.misses}
    for miss in row.misses:
        # the missed module itself: an IPL006 ``not-installed`` site names the module path search
        # did not find (reported once per light module, at the first import the engine reached)
        near = {miss["module"], miss["by"], miss["parent"],
                *(frame.split(":")[0] for frame in miss["stack"])}
        info = row.importers.get(miss["module"], {})
        near |= {str(Path(frame[1]).resolve()) for frame in info.get("frames", ()) if frame[1]}
        miss["announced"] = bool(near & announced)
    for miss in row.misses:
        if miss["root"] != miss["module"] and miss["root"] in by_module:
            miss["announced"] = miss["announced"] or by_module[miss["root"]]["announced"]
    # An extra's divergence: the first hop of its predicted chain that imports an extra (the
    # statement the prediction followed and the interpreter did not); that extra is its root.
    extra_set = set(predicted) - set(executed)
    for name in sorted(extra_set):
        chain = row.prediction.chains.get(name, [])
        hop = next((h for h in chain if h["imported"] in extra_set), None)
        row.extras.append({
            "module": name, "file": short(predicted[name], sites),
            "alias_key": name in row.executed.aliases,
            "ran_and_failed": name in row.failed,
            "root": hop["imported"] if hop else name,
            "hop": ({key: hop.get(key) for key in ("module", "path", "line", "kind", "flags")}
                    if hop else None),
            "source": source_line(hop["abspath"], hop["line"]) if hop else "",
            "chain": [f"{h['module']}:{h['line']} -{h['kind']}-> {h['imported']}" for h in chain],
        })


def _packages_of(name: str) -> list[str]:
    """``a.b.c``'s packages, nearest first: ``a.b``, ``a``."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(len(parts) - 1, 0, -1)]


def _stack_modules(miss: dict[str, Any]) -> list[str]:
    """The modules whose code is on a miss's importing stack, innermost first."""
    return [m for m in [miss["by"], *(frame.split(":")[0] for frame in miss["stack"])] if m]


MAYBE = frozenset({"guarded", "conditional", "fallback"})
"""Hop flags that say the hop may not run."""


def pct(value: float) -> str:
    return f"{100 * value:.1f} %"


def render_table(rows: Sequence[Row]) -> str:
    headers = ["package", "version", "executed", "predicted", "definite", "hits", "recall",
               "precision", "precision (all)", "root misses", "silent", "aliases", "unresolved",
               "why s"]
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(" --- " for _ in headers) + "|"]
    for row in rows:
        cells = [row.label, row.version, len(row.executed.modules), len(row.prediction.modules),
                 len(row.definite), row.hits, pct(row.recall), pct(row.precision),
                 pct(row.precision_all), row.root_misses, row.silent_misses,
                 len(row.executed.aliases), row.prediction.unresolved,
                 f"{row.prediction.wall:.2f}"]
        if row.executed.error or row.prediction.error:
            cells[0] = f"{row.label} (!)"
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)


def micro(rows: Sequence[Row]) -> dict[str, float]:
    hits = sum(r.hits for r in rows)
    executed = sum(len(r.executed.modules) for r in rows)
    predicted = sum(len(r.prediction.modules) for r in rows)
    definite = sum(len(r.definite) for r in rows)
    definite_hits = sum(r.definite_hits for r in rows)
    return {
        "hits": hits, "executed": executed, "predicted": predicted,
        "definite": definite, "definite_hits": definite_hits,
        "recall": hits / executed if executed else 1.0,
        "precision": definite_hits / definite if definite else 1.0,
        "precision_all": hits / predicted if predicted else 1.0,
        "misses": executed - hits, "extras": predicted - hits,
        "root_misses": sum(r.root_misses for r in rows),
        "silent_misses": sum(r.silent_misses for r in rows),
        "root_extras": sum(r.root_extras for r in rows),
        "failed_extras": sum(r.failed_extras for r in rows),
        "aliases": sum(len(r.executed.aliases) for r in rows),
        "why_seconds": sum(r.prediction.wall for r in rows),
        "unresolved": sum(r.prediction.unresolved for r in rows),
        "min_recall": min((r.recall for r in rows), default=1.0),
    }


def targets_line(rows: Sequence[Row], totals: dict[str, float], ml: bool) -> str:
    """The targets of the table: the ML environment's (issue 25) or the popular set's (issue 29)."""
    floor, precision_all = (0.97, 0.90) if ml else (0.95, 0.95)
    low = [row.label for row in rows if row.recall < floor]
    checks = [
        ("micro recall >= 99 %", totals["recall"] >= 0.99),
        ("micro precision >= 99 %", totals["precision"] >= 0.99),
        (f"micro precision (all) >= {100 * precision_all:.0f} %",
         totals["precision_all"] >= precision_all),
    ]
    text = "; ".join(f"{label}: {'yes' if ok else 'NO'}" for label, ok in checks)
    rows_ok = "yes" if not low else "NO (" + ", ".join(low) + ")"
    text += f"; every row >= {100 * floor:.0f} % recall: {rows_ok}"
    text += f"; no silent miss: {'yes' if not totals['silent_misses'] else 'NO'}"
    return f"\ntargets: {text}; unresolved sites (IPL006) {totals['unresolved']:.0f}"


def describe_miss(miss: dict[str, Any]) -> str:
    if miss["by"] is None and miss["parent"]:
        text = f"  miss  {miss['module']}  <- compiled code of {miss['parent']}"
    else:
        where = f"{miss['at']}:{miss['line']}" if miss["at"] else "?"
        text = f"  miss  {miss['module']}  <- {miss['by']} ({where}"
        text += f" in {miss['function']})" if miss["function"] not in (None, "<module>") else ")"
        if miss["parent"] and miss["parent"] != miss["by"]:
            text += f" while {miss['parent']} runs"
    if miss["parent_kind"] == "extension":
        text += " (an extension module)"
    if miss["root"] != miss["module"]:
        text += f" [downstream of {miss['root']}]"
    if not miss["announced"]:
        text += " SILENT (no IPL006/IPL005 at or behind it)"
    if miss["source"]:
        text += f"\n          | {miss['source'][:150]}"
    return text


def describe_extra(extra: dict[str, Any]) -> str:
    text = f"  extra {extra['module']}" + (" (ran, raised)" if extra["ran_and_failed"] else "")
    hop = extra["hop"]
    if hop is None:
        return text + "  (no chain)"
    flags = f", {', '.join(hop['flags'])}" if hop["flags"] else ""
    text += f"  <- {hop['module']} ({hop['path']}:{hop['line']}, {hop['kind']}{flags})"
    if extra["root"] != extra["module"]:
        text += f" [downstream of {extra['root']}]"
    elif extra["source"]:
        text += f"\n          | {extra['source'][:150]}"
    return text


# -- main ----------------------------------------------------------------------------------------


def default_importpolicy() -> str:
    for candidate in (REPO / ".venv" / "bin" / "importpolicy", Path(sys.executable).parent / "importpolicy"):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    raise SystemExit(f"no importpolicy in {REPO / '.venv' / 'bin'}; make the venv first "
                     "(python -m venv .venv && .venv/bin/pip install -e '.[test]')")


def engine_location(importpolicy: str) -> str:
    python = Path(importpolicy).parent / "python"
    if not python.is_file():  # a wrapper script of an engine snapshot, outside any venv
        return "?"
    proc = subprocess.run([str(python), "-c", "import flake8_importpolicy as m; print(m.__file__)"],
                          capture_output=True, text=True, env=clean_env())
    return proc.stdout.strip() or "?"


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--packages", help="comma-separated distribution or import names (default: all)")
    ap.add_argument("--json", metavar="FILE", help="write every detail (misses, extras, importers) here")
    ap.add_argument("--show-misses", type=int, default=0, metavar="N",
                    help="print up to N missed and N extra modules per package")
    ap.add_argument("--requirements", type=Path, default=None,
                    help=f"the pins (default: {REQUIREMENTS.name}; {ML_REQUIREMENTS.name} with --ml)")
    ap.add_argument("--ml", action="store_true",
                    help="the ML environment's table (issue 25): its pins and its targets (micro "
                    "recall >= 99 %%, every row >= 97 %%, precision over all predictions >= 90 %%)")
    ap.add_argument("--importpolicy", default=None, help="the importpolicy executable under test "
                    "(default: the worktree's .venv/bin/importpolicy)")
    ap.add_argument("--python", default=sys.executable, help="base interpreter of the package venv")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per subprocess")
    ap.add_argument("--call-depth", type=int, default=None, metavar="N",
                    help="settings.call-depth of the temporary policy (default: the engine's)")
    ap.add_argument("--first-party", action="store_true",
                    help="an experiment: make the venv's site-packages the policy's source root, so "
                    "that every installed package is first-party (import-time calls and PEP 562 "
                    "triggers are followed in first-party code only)")
    args = ap.parse_args(argv)
    if args.requirements is None:
        args.requirements = ML_REQUIREMENTS if args.ml else REQUIREMENTS

    importpolicy = args.importpolicy or default_importpolicy()
    requirements = parse_requirements(args.requirements)
    if args.packages:
        wanted = {w.strip().lower() for w in args.packages.split(",") if w.strip()}
        requirements = [r for r in requirements
                        if r.name.lower() in wanted or wanted & {m.lower() for m in r.imports}]
        if not requirements:
            raise SystemExit(f"--packages {args.packages}: none of them is in {args.requirements}")
    python = venv_python(args.requirements, args.python)
    sites, version = site_dirs(python)
    versions = installed_versions(python)
    print(f"importpolicy: {importpolicy} (engine {engine_location(importpolicy)})", file=sys.stderr)
    print(f"venv: {python} (Python {version.split()[0]}); site-packages: {', '.join(sites)}",
          file=sys.stderr)

    rows: list[Row] = []
    beyond_rows: list[Row] = []
    for req in requirements:
        for module in (*req.imports, *req.beyond):
            print(f"[differential] {req.name} {module} ...", file=sys.stderr, end=" ", flush=True)
            plain = run_oracle(python, module, False, args.timeout)
            traced = run_oracle(python, module, True, args.timeout)
            executed = executed_modules(plain, sites)
            traced_set = set(executed_modules(traced, sites).modules)
            diff = sorted(set(executed.modules) ^ traced_set)
            prediction = predict(importpolicy, python, module, sites, args.timeout, args.first_party,
                                 args.call_depth)
            row = Row(req.name, versions.get(re.sub(r"[-_.]+", "-", req.name).lower(), req.version),
                      module, executed, prediction, traced["importers"],
                      {key: path for key, _, path in traced["modules"]},
                      {key for key, _ in traced["failed"]}, diff)
            compare(row, sites)
            (beyond_rows if module in req.beyond else rows).append(row)
            print(f"executed {len(executed.modules)}, predicted {len(prediction.modules)}, "
                  f"recall {pct(row.recall)}, precision {pct(row.precision)}, "
                  f"why {prediction.wall:.1f} s", file=sys.stderr)
            for problem in (executed.error, prediction.error):
                if problem:
                    print(f"    (!) {problem}", file=sys.stderr)

    totals = micro(rows)
    print(f"## Differential: predicted vs executed import-time closure ({len(rows)} imports)\n")
    print(f"importpolicy: `{importpolicy}`; venv: `{python}` (Python {version.split()[0]})"
          + ("; `--first-party`: site-packages is the source root" if args.first_party else "") + "\n")
    print(render_table(rows))
    print()
    print(f"micro recall {pct(totals['recall'])} ({totals['hits']}/{totals['executed']}), "
          f"micro precision {pct(totals['precision'])} ({totals['definite_hits']}/{totals['definite']} "
          f"definite predictions; all predictions: {pct(totals['precision_all'])}, "
          f"{totals['hits']}/{totals['predicted']}); "
          f"{totals['misses']} misses ({totals['root_misses']} roots, "
          f"{totals['silent_misses']} silent), "
          f"{totals['extras']} extras ({totals['root_extras']} roots; {totals['failed_extras']} of them "
          "ran and raised ImportError, caught by the importer), "
          f"{totals['aliases']} aliases; why total {totals['why_seconds']:.1f} s")
    print(targets_line(rows, totals, args.ml))
    if beyond_rows:
        print("\n### Beyond the target set (measured, not counted above; see docs/performance.md)\n")
        print(render_table(beyond_rows))
    for row in [*rows, *beyond_rows]:
        for label, problem in (("import", row.executed.error), ("why", row.prediction.error)):
            if problem:
                print(f"\n(!) {row.label}: {label} failed: {problem}")
        if row.traced_diff:
            print(f"\n(!) {row.label}: the traced oracle run differs on {len(row.traced_diff)} modules: "
                  + ", ".join(row.traced_diff[:10]))
    if args.show_misses > 0:
        for row in [*rows, *beyond_rows]:
            if not row.misses and not row.extras:
                continue
            print(f"\n### {row.label}: {len(row.misses)} misses ({row.root_misses} roots), "
                  f"{len(row.extras)} extras ({row.root_extras} roots)")
            roots_first = sorted(row.misses, key=lambda m: (m["root"] != m["module"], m["module"]))
            for miss in roots_first[:args.show_misses]:
                print(describe_miss(miss))
            roots_first = sorted(row.extras, key=lambda e: (e["root"] != e["module"], e["module"]))
            for extra in roots_first[:args.show_misses]:
                print(describe_extra(extra))

    if args.json:
        payload = {
            "importpolicy": importpolicy, "engine": engine_location(importpolicy),
            "venv_python": str(python), "python_version": version, "site_packages": sites,
            "first_party": args.first_party,
            "requirements": str(args.requirements), "installed": versions, "micro": totals,
            "beyond": [r.label for r in beyond_rows],
            "rows": [{
                "package": r.package, "version": r.version, "module": r.module,
                "executed": len(r.executed.modules), "predicted": len(r.prediction.modules),
                "predicted_total": r.prediction.total, "hits": r.hits,
                "recall": r.recall, "precision": r.precision,
                "precision_all": r.precision_all, "root_misses": r.root_misses,
                "silent_misses": r.silent_misses,
                "root_extras": r.root_extras, "failed_extras": r.failed_extras,
                "why_seconds": r.prediction.wall, "unresolved": r.prediction.unresolved,
                "import_error": r.executed.error,
                "why_error": r.prediction.error, "aliases": r.executed.aliases,
                "lazy_unexecuted": r.executed.lazy, "traced_diff": r.traced_diff,
                "misses": r.misses, "extras": r.extras,
            } for r in [*rows, *beyond_rows]],
        }
        Path(args.json).write_text(json.dumps(payload, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
