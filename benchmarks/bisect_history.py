"""``importpolicy bisect`` over 40 commits of vLLM history: cold (no facts cache) and warm.

Usage::

    python benchmarks/bisect_history.py [--runs 5] [--history synthetic,releases]

Two histories, built once under ``<bench cache>/history/`` (never inside the repository):

- ``synthetic``: the vLLM 0.33.0 tree (``fetch.py``) committed as it is, then 40 commits that edit
  the light modules' closures (a comment appended to a module, a re-export of a cheap module added
  to or removed from a package), the 26th of which adds the incident's re-export
  ``from .fused_allreduce_rms_norm import fused_allreduce_rms_norm`` to
  ``vllm/models/common/ops/__init__.py`` (as ``vllm_seed.py`` does). ``--good`` is the tree,
  ``--bad`` the 40th commit.
- ``releases``: vLLM's own history at release granularity, one commit per release from 0.9.2 to
  0.33.0 (40 releases, each wheel downloaded from the package index with ``pip download``, its
  ``vllm/`` files committed, ``.py`` files with their bytes and every other file empty, then the
  wheel deleted). Successive releases change hundreds of files, so every step of the search is
  close to a cold check of a new tree. The policy (``RELEASES_POLICY``) names vLLM light modules
  whose first-party closure grew heavy over these releases: five real findings to trace.

Each run is a fresh ``importpolicy bisect`` process; cold runs delete the policy's cache directory
first (facts and interpreter facts), warm runs keep what the previous run wrote. Medians of the wall
time and of the CPU time (the process and the git processes it ran: on a shared, loaded machine the
wall time is mostly waiting) are printed with the spread and the exit status.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import load_average, script  # noqa: E402
from fetch import cache_root, fetch_wheel_tree  # noqa: E402
from vllm_seed import POLICY_TOML  # noqa: E402

SEED_FILE = "vllm/models/common/ops/__init__.py"
SEED_ANCHOR = "from .fused_qk_rmsnorm import"
SEED_LINE = "from .fused_allreduce_rms_norm import fused_allreduce_rms_norm"

SYNTHETIC_POLICY = POLICY_TOML  # vllm_seed.py's: three light modules, four heavy ones

RELEASES = (
    "0.9.2 0.10.0 0.10.1 0.10.1.1 0.10.2 0.11.0 0.11.1 0.11.2 0.12.0 0.13.0 0.14.0 0.14.1 "
    "0.15.0 0.15.1 0.16.0 0.17.0 0.17.1 0.18.0 0.18.1 0.19.0 0.19.1 0.20.0 0.20.1 0.20.2 0.21.0 "
    "0.22.0 0.22.1 0.23.0 0.24.0 0.25.0 0.25.1 0.26.0 0.27.0 0.27.1 0.28.0 0.29.0 0.30.0 0.31.0 "
    "0.32.0 0.33.0"
).split()

# Between 0.9.2 and 0.33.0 the request-object modules grew imports of vllm.config and
# vllm.multimodal, and vllm.outputs one of vllm.compilation: five findings at 0.33.0 that 0.9.2
# does not have. The settings and [heavy] are vllm_seed.py's.
RELEASES_POLICY = POLICY_TOML[:POLICY_TOML.index("[light.")] + """\
[light."vllm.sampling_params"]
reason = "request objects built by API clients"

[light."vllm.pooling_params"]
reason = "request objects built by API clients"

[light."vllm.outputs"]
reason = "result objects read by API clients"

[light."vllm.envs"]
reason = "read by every process at start-up, including the CLI"

[light."vllm.logger"]
reason = "imported by every vllm module; must stay cheap"
"""


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@localhost",
           "GIT_AUTHOR_DATE": "2026-01-01T00:00:00", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00"}
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True, env=env).stdout.strip()


def _commit_all(repo: Path, message: str) -> None:
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "--allow-empty", "-m", message)


def build_synthetic() -> Path:
    """The synthetic history (built once; a ``.complete`` marker says it is whole)."""
    repo = cache_root() / "history" / "vllm-synthetic"
    if (repo / ".git" / "bench-complete").is_file():
        return repo
    shutil.rmtree(repo, ignore_errors=True)
    tree = fetch_wheel_tree("vllm", "0.33.0")
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    shutil.copytree(tree / "vllm", repo / "vllm", ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "policy.toml").write_text(SYNTHETIC_POLICY)
    _commit_all(repo, "vLLM 0.33.0")
    # modules of the light closures and packages whose __init__ can take a cheap re-export
    touched = ["vllm/envs.py", "vllm/logger.py", "vllm/models/common/ops/__init__.py",
               "vllm/logging_utils/__init__.py", "vllm/utils/__init__.py", "vllm/env_override.py",
               "vllm/version.py", "vllm/models/common/__init__.py"]
    touched = [name for name in touched if (repo / name).is_file()]
    for number in range(1, 41):
        if number == 26:
            path = repo / SEED_FILE
            lines = path.read_text().splitlines(keepends=True)
            at = next(i for i, line in enumerate(lines) if line.startswith(SEED_ANCHOR))
            lines.insert(at + 1, SEED_LINE + "\n")
            path.write_text("".join(lines))
            _commit_all(repo, "ops: re-export fused_allreduce_rms_norm")
            continue
        path = repo / touched[number % len(touched)]
        if number % 7 == 0:
            text = path.read_text()
            line = "from vllm import version as _bench_version  # noqa: F401\n"
            path.write_text(text.replace(line, "") if line in text else text + line)
            _commit_all(repo, f"re-export edit {number} in {path.relative_to(repo)}")
        else:
            with path.open("a") as handle:
                handle.write(f"# edit {number}\n")
            _commit_all(repo, f"edit {number} in {path.relative_to(repo)}")
    (repo / ".git" / "bench-complete").write_text("40 commits\n")
    return repo


def build_releases() -> Path:
    """The release history: one commit per vLLM release of :data:`RELEASES` (built once)."""
    repo = cache_root() / "history" / "vllm-releases"
    if (repo / ".git" / "bench-complete").is_file():
        return repo
    wheels = cache_root() / "history-wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    if not (repo / ".git").is_dir():
        repo.mkdir(parents=True, exist_ok=True)
        _git(repo, "init", "-q", "-b", "main")
    done = set(_git(repo, "log", "--format=%s").splitlines()) if _git(repo, "rev-list", "--all") else set()
    for version in RELEASES:
        if f"vLLM {version}" in done:
            continue
        found = sorted(wheels.glob(f"vllm-{version}-*.whl"))
        if not found:
            subprocess.run([sys.executable, "-m", "pip", "download", f"vllm=={version}", "--no-deps",
                            "--only-binary=:all:", "-q", "-d", str(wheels)], check=True)
            found = sorted(wheels.glob(f"vllm-{version}-*.whl"))
        shutil.rmtree(repo / "vllm", ignore_errors=True)
        with zipfile.ZipFile(found[0]) as archive:
            for info in archive.infolist():
                if not info.filename.startswith("vllm/") or info.is_dir():
                    continue
                target = repo / info.filename
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(archive.read(info) if info.filename.endswith(".py") else b"")
        (repo / "policy.toml").write_text(RELEASES_POLICY)
        _commit_all(repo, f"vLLM {version}")
        found[0].unlink()  # a few hundred MB each; the commit keeps what the benchmark reads
    (repo / ".git" / "bench-complete").write_text(f"{len(RELEASES)} releases\n")
    return repo


def _run(repo: Path, good: str, lights: list[str]) -> tuple[float, float, int, str]:
    """One ``importpolicy bisect`` process: ``(wall seconds, CPU seconds of it and of the git
    processes it ran, exit status, output)``."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([script("importpolicy"), "bisect", "--good", good, "--bad", "HEAD",
                           *lights], cwd=repo, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, done.returncode, done.stdout + done.stderr


def measure(name: str, repo: Path, runs: int, lights: list[str]) -> None:
    good = _git(repo, "rev-list", "--max-parents=0", "HEAD")
    count = _git(repo, "rev-list", "--count", f"{good}..HEAD")
    cache = repo / ".importpolicy_cache"
    walls: dict[str, list[float]] = {"cold": [], "warm": []}
    cpus: dict[str, list[float]] = {"cold": [], "warm": []}
    output = ""
    codes: set[int] = set()
    load = load_average()
    for _ in range(runs):
        shutil.rmtree(cache, ignore_errors=True)
        for kind in ("cold", "warm"):  # warm: the facts cache the cold run just wrote
            wall, cpu, code, output = _run(repo, good, lights)
            walls[kind].append(wall)
            cpus[kind].append(cpu)
            codes.add(code)
    print(f"## {name}: {count} commits after --good, {runs} runs each, load {load} .. "
          f"{load_average()}")
    for kind in ("cold", "warm"):
        print(f"{kind}: wall median {statistics.median(walls[kind]):.2f} s (min "
              f"{min(walls[kind]):.2f}, max {max(walls[kind]):.2f}); CPU median "
              f"{statistics.median(cpus[kind]):.2f} s (bisect and its git processes)")
    print(f"exit status {sorted(codes)}; last output:\n{output}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--history", default="synthetic,releases")
    parser.add_argument("--light", action="append", default=[],
                        help="light modules to search for (default: every one flagged at --bad)")
    args = parser.parse_args()
    for name in args.history.split(","):
        repo = build_synthetic() if name == "synthetic" else build_releases()
        measure(name, repo, args.runs, args.light)


if __name__ == "__main__":
    main()
