"""Shared helpers of the benchmark scripts (stdlib only): codebases, policies, timing.

Every run is a fresh subprocess, measured from outside (wall clock around ``subprocess.run``) and,
when GNU time is installed, with its ``Maximum resident set size`` as the peak memory. Nothing is
written into the repository: policies, import-linter configurations and caches live under
``<bench cache>/bench/`` (see :func:`fetch.cache_root`).

Bytecode: this machine's environment sets ``PYTHONDONTWRITEBYTECODE=1``, which would make every
run of every tool recompile the tools' own modules. :func:`bench_env` removes it for all tools
alike and :func:`prewarm_bytecode` compiles the tools' packages before anything is timed.
"""

from __future__ import annotations

import compileall
import importlib.util
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fetch import cache_root  # noqa: E402,F401  (re-exported)

GNU_TIME = "/usr/bin/time"
REPO = Path(__file__).resolve().parent.parent


# -- executables ---------------------------------------------------------------------------------


def script(name: str) -> str:
    """The console script ``name`` installed next to this interpreter.

    Never a pyenv shim from PATH: a shim is a shell script that adds ~0.1 s to every run.
    """
    for directory in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        candidate = Path(directory) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which(name)
    if found is None:
        raise SystemExit(f"{name!r} is not installed next to {sys.executable}")
    return found


def bench_env(pythonpath: Optional[Path] = None) -> dict[str, str]:
    """The environment of every timed run: bytecode writing on, optional PYTHONPATH."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PYTHONPATH", None)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return env


def snapshot_engine() -> tuple[Path, str]:
    """Copy the repository's ``flake8_importpolicy`` package to a content-addressed directory.

    Returns ``(directory to put first on PYTHONPATH, description)``. Used with ``--snapshot-engine``
    so that a benchmark run measures one consistent engine while the working tree is being edited
    (an edit of an engine file also changes the cache fingerprint, which would turn warm runs cold).
    """
    import hashlib

    package = REPO / "flake8_importpolicy"
    digest = hashlib.sha256()
    files = sorted(p for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    for path in files:
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    key = digest.hexdigest()[:12]
    root = cache_root() / "engine-snapshots" / key
    if not (root / "flake8_importpolicy").is_dir():
        tmp = root.with_name(key + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(package, tmp / "flake8_importpolicy",
                        ignore=shutil.ignore_patterns("__pycache__"))
        compileall.compile_dir(tmp, quiet=1, workers=0)
        shutil.rmtree(root, ignore_errors=True)
        tmp.rename(root)
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "flake8_importpolicy"],
                           capture_output=True, text=True).stdout.strip()
    state = f"git {head}" + (" + uncommitted engine changes" if dirty else "")
    return root, f"engine snapshot {key} ({state}) at {root}"


def snapshot_engine_rev(rev: str) -> tuple[Path, str]:
    """Check out ``flake8_importpolicy`` of the git revision ``rev`` into a directory keyed by the
    revision's tree (``git archive``, nothing else of the repository), compiled to bytecode.

    Returns ``(directory to put first on PYTHONPATH, description)``, like :func:`snapshot_engine`.
    """
    import io
    import tarfile

    resolved = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", f"{rev}^{{tree}}"],
                              capture_output=True, text=True)
    if resolved.returncode != 0:
        raise SystemExit(f"--engine-rev {rev!r}: not a revision of {REPO}")
    key = "rev-" + resolved.stdout.strip()[:12]
    root = cache_root() / "engine-snapshots" / key
    if not (root / "flake8_importpolicy").is_dir():
        archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", rev,
                                  "flake8_importpolicy"], capture_output=True, check=True).stdout
        tmp = root.with_name(key + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        compileall.compile_dir(tmp, quiet=1, workers=0)
        shutil.rmtree(root, ignore_errors=True)
        tmp.rename(root)
    short = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", rev],
                           capture_output=True, text=True).stdout.strip()
    return root, f"engine of revision {rev} ({short}) at {root}"


ENGINE_PATH: Optional[Path] = None
"""When set (``--snapshot-engine``), importpolicy runs import the engine from here."""


def engine_env() -> dict[str, str]:
    """The environment of importpolicy runs (with the engine snapshot first on PYTHONPATH)."""
    return bench_env(ENGINE_PATH)


def prewarm_bytecode() -> None:
    """Compile the benchmarked tools' own packages (and their dependencies) to ``__pycache__``."""
    names = ["flake8_importpolicy", "importlinter", "grimp", "click", "rich", "flake8",
             "pycodestyle", "pyflakes", "tomllib", "ast", "json", "typing"]
    for name in names:
        spec = importlib.util.find_spec(name)  # top-level packages only: nothing is executed
        if spec is None:
            continue
        if spec.submodule_search_locations:
            for location in spec.submodule_search_locations:
                compileall.compile_dir(location, quiet=1, workers=0)
        elif spec.origin and spec.origin.endswith(".py"):
            compileall.compile_file(spec.origin, quiet=1)


# -- measuring -----------------------------------------------------------------------------------


@dataclass
class Run:
    wall: float
    peak_mib: float
    cpu: float  # user + system seconds of the process tree (NaN without GNU time)
    returncode: int
    stdout: str
    stderr: str


def measure(argv: Sequence[str], *, cwd: Path, env: dict[str, str], stdin: Optional[str] = None,
            peak: bool = True) -> Run:
    """Run ``argv`` once (``stdin`` as its input); wall seconds, peak RSS in MiB and CPU seconds,
    user + system of the process and the children it waited for.

    With ``peak`` and GNU time installed, the command runs under ``time -v``, which gives the peak
    and the CPU time; otherwise the peak is NaN and the CPU time comes from this process's
    ``RUSAGE_CHILDREN`` (nothing runs between the timer and the command: the per-file benchmarks
    measure a few milliseconds).
    """
    cmd = list(argv)
    timefile = None
    if peak and os.path.exists(GNU_TIME):
        fd, timefile = tempfile.mkstemp(prefix="bench-time-", suffix=".txt")
        os.close(fd)
        cmd = [GNU_TIME, "-v", "-o", timefile] + cmd
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, input=stdin, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak_mib = float("nan")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    if timefile:
        user = system = 0.0
        with open(timefile) as handle:
            for line in handle:
                if "Maximum resident set size" in line:
                    peak_mib = int(line.rsplit(":", 1)[1]) / 1024
                elif "User time (seconds)" in line:
                    user = float(line.rsplit(":", 1)[1])
                elif "System time (seconds)" in line:
                    system = float(line.rsplit(":", 1)[1])
        cpu = user + system
        os.unlink(timefile)
    return Run(wall, peak_mib, cpu, proc.returncode, proc.stdout, proc.stderr)


@dataclass
class Series:
    """The runs of one benchmark row."""

    label: str
    runs: list[Run] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(r.wall for r in self.runs)

    @property
    def cpu(self) -> float:
        return statistics.median(r.cpu for r in self.runs)

    @property
    def spread(self) -> tuple[float, float]:
        walls = [r.wall for r in self.runs]
        return min(walls), max(walls)

    @property
    def peak(self) -> float:
        return max(r.peak_mib for r in self.runs)

    @property
    def exits(self) -> str:
        return ",".join(sorted({str(r.returncode) for r in self.runs}))


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def fmt_s(seconds: float) -> str:
    return f"{seconds:.3f}" if seconds < 10 else f"{seconds:.2f}"


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A GitHub-flavoured markdown table."""
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join(" --- " for _ in headers) + "|"]
    for row in rows:
        out.append("| " + " | ".join(str(c) for c in row) + " |")
    return "\n".join(out)


def fresh_dir(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


# -- codebases and their policies ----------------------------------------------------------------


@dataclass(frozen=True)
class Codebase:
    """A benchmarked source tree and its 5-light-module policy.

    ``heavy`` patterns that are not under ``packages`` are third-party (``external = "stop"``
    matches them by name; import-linter needs ``include_external_packages``).
    """

    key: str
    dist: str
    version: str
    packages: tuple[str, ...]
    light: tuple[tuple[str, str], ...]
    heavy: tuple[tuple[str, str], ...]

    def external_heavy(self) -> list[str]:
        return [h for h, _ in self.heavy if h.split(".")[0] not in self.packages]


CODEBASES: dict[str, Codebase] = {
    "vllm": Codebase(
        key="vllm", dist="vllm", version="0.33.0", packages=("vllm",),
        light=(
            ("vllm.models.common.ops", "imported by the API server before EngineCore forks"),
            ("vllm.envs", "read by every process at start-up, including the CLI"),
            ("vllm.logger", "imported by every vllm module; must stay cheap"),
            ("vllm.entrypoints.cli.main", "`vllm --help` must start fast"),
            ("vllm.sampling_params", "request objects built by API clients"),
        ),
        heavy=(
            ("vllm.config", "imports torch and probes the platform"),
            ("vllm.compilation", "pulls in torch._dynamo / inductor machinery"),
            ("vllm.lora", "LoRA layers import the model executor and torch kernels"),
            ("vllm.multimodal", "imports media decoders and the multimodal registry"),
        ),
    ),
    "transformers": Codebase(
        key="transformers", dist="transformers", version="5.17.0", packages=("transformers",),
        light=(
            ("transformers.utils.logging", "used by every tool that only wants a logger"),
            ("transformers.configuration_utils", "configs are read without a framework"),
            ("transformers.tokenization_utils_base", "tokenizers run without torch"),
            ("transformers.hf_argparser", "argument parsing in CLIs"),
            ("transformers.cli.transformers", "`transformers --help` must start fast"),
        ),
        heavy=(
            ("torch", "2 s to import"),
            ("transformers.modeling_utils", "imports torch and every integration"),
            ("transformers.pipelines", "imports every task and model family"),
        ),
    ),
    "torch": Codebase(
        key="torch", dist="torch", version="2.13.0+cpu", packages=("torch", "torchgen"),
        light=(
            ("torch.nn", "`import torch.nn` must not start the compiler stack"),
            ("torch.utils.data", "data-loader workers import it"),
            ("torch.optim", "optimizers only"),
            ("torch.autograd", "autograd only"),
            ("torchgen.model", "code generation must not need torch"),
        ),
        heavy=(
            ("torch._dynamo", "the compiler front end"),
            ("torch._inductor", "the compiler back end"),
            ("torch.onnx", "the exporter"),
            ("sympy", "symbolic shapes"),
            ("numpy", "optional dependency"),
        ),
    ),
}


VLLM_PLATFORMS = ("vllm.platforms", "imported by every process to detect the device")
"""A sixth light module of vLLM (``flake8_overhead.py``'s policy names it)."""


def vllm_light(*names: str) -> list[tuple[str, str]]:
    """``(module, reason)`` of the named light modules of vLLM, with the reasons every benchmark
    gives them (:data:`CODEBASES`, :data:`VLLM_PLATFORMS`)."""
    reasons = dict((*CODEBASES["vllm"].light, VLLM_PLATFORMS))
    return [(name, reasons[name]) for name in names]


def render_policy(light: Sequence[tuple[str, str]], heavy: Sequence[tuple[str, str]], *,
                  header: str, source_root: str = ".", cache_dir: Optional[str] = None,
                  interpreter: Optional[str] = None, external: str = "stop") -> str:
    """A policy (``external = "stop"`` unless given): a ``# header`` line, ``[settings]``, ``[heavy]``
    and one ``[light."..."]`` table per light module (``(name, reason)`` pairs)."""
    lines = [
        f"# {header}",
        "[settings]",
        f"source-roots = [{json.dumps(source_root)}]",
        *([f"interpreter = {json.dumps(interpreter)}"] if interpreter is not None else []),
        f'external = "{external}"',
        *([f'cache-dir = "{cache_dir}"'] if cache_dir is not None else []),
        "",
        "[heavy]",
        *(f'"{name}" = "{reason}"' for name, reason in heavy),
        "",
    ]
    for name, reason in light:
        lines += [f'[light."{name}"]', f'reason = "{reason}"', ""]
    return "\n".join(lines)


def policy_toml(tree: Path, light: Sequence[tuple[str, str]], heavy: Sequence[tuple[str, str]],
                cache_dir: str = ".importpolicy_cache") -> str:
    return render_policy(light, heavy, header="Generated by benchmarks/common.py",
                         source_root=str(tree), cache_dir=cache_dir)


def importlinter_ini(packages: Sequence[str], light: Sequence[str], heavy: Sequence[str],
                     external: bool) -> str:
    """One ``forbidden`` contract: source_modules = light, forbidden_modules = heavy."""
    lines = ["[importlinter]"]
    if len(packages) == 1:
        lines.append(f"root_package = {packages[0]}")
    else:
        lines += ["root_packages =", *(f"    {p}" for p in packages)]
    if external:
        lines.append("include_external_packages = True")
    lines += [
        "",
        "[importlinter:contract:light]",
        "name = Light modules must not import heavy ones",
        "type = forbidden",
        "source_modules =",
        *(f"    {m}" for m in light),
        "forbidden_modules =",
        *(f"    {m}" for m in heavy),
        "",
    ]
    return "\n".join(lines)


def grimp_code(packages: Sequence[str], external: bool, cache_dir: Optional[Path]) -> str:
    """``python -c`` code that builds the same grimp graph as lint-imports does."""
    args = ", ".join(repr(p) for p in packages)
    return (
        "import grimp; "
        f"g = grimp.build_graph({args}, include_external_packages={external!r}, "
        f"cache_dir={str(cache_dir) if cache_dir else None!r}); "
        "print(len(g.modules))"
    )


@dataclass
class Setup:
    """Files of one benchmarked (tree, policy) pair, all outside the repository."""

    tree: Path
    work: Path
    policy: Path
    ip_cache: Path
    li_config: Path
    li_cache: Path
    grimp_cache: Path
    packages: tuple[str, ...]
    external: bool


def write_setup(work: Path, tree: Path, packages: Sequence[str],
                light: Sequence[tuple[str, str]], heavy: Sequence[tuple[str, str]]) -> Setup:
    work.mkdir(parents=True, exist_ok=True)
    policy = work / "policy.toml"
    policy.write_text(policy_toml(tree, light, heavy))
    external = any(h.split(".")[0] not in packages for h, _ in heavy)
    li_config = work / ".importlinter"
    li_config.write_text(importlinter_ini(packages, [n for n, _ in light], [n for n, _ in heavy],
                                          external))
    return Setup(
        tree=tree, work=work, policy=policy, ip_cache=work / ".importpolicy_cache",
        li_config=li_config, li_cache=work / "importlinter_cache",
        grimp_cache=work / "grimp_cache", packages=tuple(packages), external=external,
    )


def importpolicy_argv(setup: Setup, *, cache: bool) -> list[str]:
    argv = [script("importpolicy"), "check", "--policy", str(setup.policy), "--format", "json"]
    return argv if cache else argv + ["--no-cache"]


def lint_imports_argv(setup: Setup, *, cache: bool) -> list[str]:
    argv = [script("lint-imports"), str(setup.li_config), "--no-logo"]
    return argv + (["--cache-dir", str(setup.li_cache)] if cache else ["--no-cache"])


def grimp_argv(setup: Setup, *, cache: bool) -> list[str]:
    return [sys.executable, "-c",
            grimp_code(setup.packages, setup.external, setup.grimp_cache if cache else None)]


def count_facts(cache_dir: Path) -> int:
    """Module entries in an importpolicy facts cache (= distinct files parsed by the run that filled
    it; entries for single function bodies are not counted)."""
    facts = cache_dir / "facts"
    if not facts.is_dir():
        return 0
    count = 0
    for entry in facts.glob("*/*.json"):
        try:
            count += b'"sites":' in entry.read_bytes()  # sealed entries: {"crc32":..,"entry":{..}}
        except OSError:
            pass
    return count


def machine_description() -> str:
    def run(cmd: str) -> str:
        try:
            return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()
        except OSError:
            return "?"

    lscpu = run("lscpu | head -n 20")
    ram = run("free -g | awk '/Mem:/ {print $2}'")
    model = next((line.split(":", 1)[1].strip() for line in lscpu.splitlines()
                  if line.startswith("Model name")), "?")
    return (
        f"nproc={run('nproc')}; CPU: {model}; "
        f"RAM: {ram} GiB; "
        f"Python {sys.version.split()[0]} ({sys.executable}); "
        f"grimp {_version('grimp')}; import-linter {_version('import-linter')}; "
        f"flake8-importpolicy {_version('flake8-importpolicy')}"
    )


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"
