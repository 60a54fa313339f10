"""Build the repository of docs/bisect-and-fix.md's walk: ``python make_repo.py DIRECTORY``.

A git repository shaped like the incident: release ``v1.0`` is clean; nine commits later a light
package (``inferno.models.common.ops``) re-exports a function whose module reaches
``inferno.config``, and two call sites use the re-exported name. Every commit has a fixed author,
committer and date, so the hashes are the ones the page shows. An untracked ``notes.txt`` stands for
uncommitted work (bisect leaves it alone). tests/test_bisect.py builds it and runs the page's
commands.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

POLICY = """\
[settings]
source-roots = ["src"]

[heavy]
"inferno.config" = "initialises CUDA: a process that imports it cannot fork workers"

[light."inferno.models.common.ops"]
reason = "imported by the API server before the engine worker forks"
"""

OPS = '''\
"""Fused kernels used by the model layers."""

from .layernorm import rms_norm
{reexport}
__all__ = [{names}]
'''

RELEASE = {
    "policy.toml": POLICY,
    "src/inferno/__init__.py": "",
    "src/inferno/config.py": "import os\n\nCUDA_VISIBLE = os.environ.get(\"CUDA_VISIBLE_DEVICES\", \"\")\n",
    "src/inferno/distributed/__init__.py": "",
    "src/inferno/distributed/parallel_state.py": (
        "from inferno.config import CUDA_VISIBLE\n\n\ndef world_size():\n"
        "    return len(CUDA_VISIBLE.split(\",\")) if CUDA_VISIBLE else 1\n"),
    "src/inferno/models/__init__.py": "",
    "src/inferno/models/common/__init__.py": "",
    "src/inferno/models/common/ops/__init__.py": OPS.format(reexport="", names='"rms_norm"'),
    "src/inferno/models/common/ops/layernorm.py": "def rms_norm(x):\n    return x\n",
    "src/inferno/models/common/ops/fused_allreduce_rms_norm.py": (
        "from inferno.distributed.parallel_state import world_size\n\n\n"
        "def fused_allreduce_rms_norm(x):\n    return x * world_size()\n"),
    "src/inferno/models/llama/__init__.py": "",
    "src/inferno/models/llama/layers.py": (
        "from inferno.models.common.ops import rms_norm\n\n\ndef forward(x):\n"
        "    return rms_norm(x)\n"),
}

HISTORY: list[tuple[str, dict[str, str]]] = [
    ("docs: how the scheduler places requests", {"docs/scheduler.md": "# The scheduler\n"}),
    ("ci: cache the wheels", {"ci/wheels.txt": "cache: pip\n"}),
    ("docs: the engine worker", {"docs/worker.md": "# The engine worker\n"}),
    ("ops: re-export fused_allreduce_rms_norm for convenience", {
        "src/inferno/models/common/ops/__init__.py": OPS.format(
            reexport="from .fused_allreduce_rms_norm import fused_allreduce_rms_norm\n",
            names='"rms_norm", "fused_allreduce_rms_norm"'),
    }),
    ("llama: the fused kernel in forward", {
        "src/inferno/models/llama/layers.py": (
            "from inferno.models.common.ops import fused_allreduce_rms_norm, rms_norm\n\n\n"
            "def forward(x):\n    return fused_allreduce_rms_norm(rms_norm(x))\n"),
    }),
    ("worker: one step of the fused kernel", {
        "src/inferno/worker/__init__.py": (
            "import inferno.models.common.ops\n\n\ndef step(x):\n"
            "    return inferno.models.common.ops.fused_allreduce_rms_norm(x)\n"),
    }),
    ("docs: fused kernels", {"docs/kernels.md": "# Fused kernels\n"}),
    ("ci: run on Python 3.13", {"ci/wheels.txt": "cache: pip\npython: ['3.12', '3.13']\n"}),
    ("docs: release notes draft", {"docs/notes.md": "# Next release\n"}),
]


def _git(repo: Path, *args: str, number: int = 0) -> None:
    date = f"2026-01-{1 + number:02d}T12:00:00+0000"
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.com", "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_NAME": "Dev", "GIT_COMMITTER_EMAIL": "dev@example.com",
        "GIT_COMMITTER_DATE": date,
    }
    subprocess.run(["git", "-C", str(repo), "-c", "commit.gpgsign=false", "-c", "core.autocrlf=false",
                    *args], check=True, env=env, stdout=subprocess.DEVNULL)


def _commit(repo: Path, message: str, files: dict[str, str], number: int) -> None:
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
    _git(repo, "add", "-A", number=number)
    _git(repo, "commit", "-q", "--no-verify", "-m", message, number=number)


def make_repo(repo: Path) -> Path:
    """Build the walk's repository in ``repo`` (a directory that does not exist, or is empty)."""
    repo.mkdir(parents=True, exist_ok=True)
    if any(repo.iterdir()):
        raise SystemExit(f"{repo} is not empty")
    _git(repo, "init", "-q", "-b", "main")
    _commit(repo, "release 1.0", RELEASE, 0)
    _git(repo, "tag", "v1.0")
    for number, (message, files) in enumerate(HISTORY, start=1):
        _commit(repo, message, files, number)
    (repo / "notes.txt").write_text("uncommitted work: bisect never touches it\n")
    return repo


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python make_repo.py DIRECTORY")
    print(make_repo(Path(sys.argv[1])))
