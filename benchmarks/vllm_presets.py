"""Real-input run of the torch-cuda preset and [assume]: vLLM 0.33.0 from PyPI, no [heavy] table.

Usage::

    python benchmarks/vllm_presets.py [--importpolicy CMD] [--summary-json PATH]

Steps (nothing of vLLM is written into the repository; the wheel is fetched and unpacked by
``fetch.py`` under ``~/.cache/flake8-importpolicy``):

1. Unpack the vllm 0.33.0 wheel and write ``policy.toml`` (:data:`POLICY_TOML`):
   ``extends = ["torch-cuda"]``, no ``[heavy]``, the six light modules of issue 17 and at most three
   ``[assume]`` entries, each true on a Linux CUDA deployment and justified in a comment.
2. Check it twice, cold (``--no-cache``): without the ``[assume]`` table and with it. Print each
   output (IPL006 blocks are counted, not printed: they are the blind spots, listed by
   ``importpolicy check`` itself), the exit status and the wall time.
3. Print, per light module, the size of the predicted import-time closure with and without the
   assumptions (``importpolicy why MODULE --format json``): what the assumptions rule out.
4. Seed a module-level ``torch.cuda.get_device_capability()`` into
   ``vllm/model_executor/warmup/jit_warmup_triton_helper.py``, a module that
   ``vllm.models.common.ops`` reaches (through ``fused_qk_rmsnorm``), in a cached copy, and check
   again: the seed must be flagged, with its chain.
5. Check ``vllm.v1.worker.gpu_worker`` (not one of the six) without and with the assumptions: the
   chain through ``vllm.platforms.rocm`` (``_get_gcn_arch()`` falls back to
   ``torch.cuda.get_device_properties``) that issue 17 describes, and how the assumptions rule it
   out.

The results, with the wall times, are in docs/presets.md ("vLLM 0.33.0").
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Run, measure, script  # noqa: E402
from fetch import fetch_wheel_tree, seeded_copy  # noqa: E402

NAME = "vllm"
VERSION = "0.33.0"
LIGHT = (
    "vllm",
    "vllm.models.common.ops",
    "vllm.envs",
    "vllm.logger",
    "vllm.entrypoints.openai.api_server",
    "vllm.v1.engine.core",
)
SEEDED = Path("vllm/model_executor/warmup/jit_warmup_triton_helper.py")
SEED = "import torch as _seed_torch\n_SEED_CAPABILITY = _seed_torch.cuda.get_device_capability()\n"

ASSUME = """\
# At most three facts about the deployment, each true on a Linux machine with NVIDIA GPUs, where
# vllm.platforms.current_platform is a CudaPlatform (vllm/platforms/cuda.py: _enum = PlatformEnum.CUDA):
[assume]
# Platform.is_rocm() is `self._enum == PlatformEnum.ROCM` (vllm/platforms/interface.py:199-200).
"vllm.platforms.current_platform.is_rocm()" = false
# Platform.is_xpu() is `self._enum == PlatformEnum.XPU` (vllm/platforms/interface.py:205-206).
"vllm.platforms.current_platform.is_xpu()" = false
# AITER is AMD's kernel library: the function returns False unless current_platform.is_rocm()
# (vllm/_aiter_ops.py:219, `if current_platform.is_rocm() and IS_AITER_FOUND:`).
"vllm._aiter_ops.is_aiter_found_and_supported()" = false
"""
EXTRA = "vllm.v1.worker.gpu_worker"
"""Not one of the six: the GPU worker, whose chains through `if current_platform.is_rocm():` issue 17
describes; checked apart to show the assumptions at work."""


def policy_toml(assume: bool, modules: tuple[str, ...] = LIGHT) -> str:
    """The policy of the run: the torch-cuda preset, the light modules, no [heavy]."""
    light = "".join(
        f'\n[light."{module}"]\nreason = "imported by the API server or the engine before it forks '
        'workers: CUDA must not be initialised at import time"\n'
        for module in modules
    )
    text = (
        f"# Issue 17 real-input run: vLLM {VERSION}, the torch-cuda preset, no [heavy].\n"
        'extends = ["torch-cuda"]\n\n[settings]\nsource-roots = ["."]\nexternal = "stop"\n'
    )
    return text + (("\n" + ASSUME) if assume else "") + light


POLICY_TOML = policy_toml(True)


def seed_edit(root: Path) -> None:
    """Append the seed to :data:`SEEDED` (so every other line keeps its number)."""
    path = root / SEEDED
    path.write_text(path.read_text() + "\n" + SEED)


def seed_line(root: Path) -> int:
    lines = (root / SEEDED).read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if "get_device_capability" in line)


def run(cmd: list[str], cwd: Path) -> tuple[Run, float]:
    result = measure(cmd, cwd=cwd, env=dict(os.environ), peak=False)
    return result, result.wall


def without_ipl006(text: str) -> tuple[str, int]:
    """The check's text output without IPL006 blocks, and how many there were."""
    kept: list[str] = []
    count = 0
    skipping = False
    for line in text.splitlines():
        if line and not line.startswith(" "):
            skipping = " IPL006 " in line
            count += skipping
        if not skipping:
            kept.append(line)
    return "\n".join(kept).strip() + "\n", count


def check(base: list[str], tree: Path, policy: Path, label: str) -> dict[str, object]:
    cmd = [*base, "check", "--no-cache", "--policy", str(policy)]
    result, wall = run(cmd, tree)
    shown, unresolved = without_ipl006(result.stdout)
    print(f"\n===== {label}: {shlex.join(cmd[-4:])}")
    sys.stdout.write(shown)
    if result.stderr.strip():
        print("--- stderr ---\n" + result.stderr.strip())
    print(f"--- exit {result.returncode}, wall {wall:.2f} s ({unresolved} IPL006 blocks not shown)")
    return {"exit": result.returncode, "wall_s": round(wall, 2), "ipl006": unresolved,
            "violations": shown.count(": IPL001 ")}


def closure_sizes(base: list[str], tree: Path, policy: Path) -> dict[str, int]:
    sizes = {}
    for module in LIGHT:
        result, _ = run([*base, "why", module, "--format", "json", "--policy", str(policy)], tree)
        sizes[module] = len(json.loads(result.stdout)["modules"]) if result.returncode == 0 else -1
    return sizes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--importpolicy", help="command to run (default: the script next to this "
                        "interpreter)")
    parser.add_argument("--summary-json", metavar="PATH", help="also write the numbers as JSON")
    args = parser.parse_args(argv)
    base = shlex.split(args.importpolicy) if args.importpolicy else [script("importpolicy")]
    started = time.perf_counter()

    tree = fetch_wheel_tree(NAME, VERSION)
    plain = tree / "policy-presets-no-assume.toml"
    assumed = tree / "policy-presets.toml"
    plain.write_text(policy_toml(False))
    assumed.write_text(POLICY_TOML)
    seeded = seeded_copy(tree, f"{NAME}-{VERSION}-seed-cuda-capability", seed_edit)
    (seeded / "policy-presets.toml").write_text(POLICY_TOML)
    print(f"tree: {tree}")
    print(f"seeded copy: {seeded} (seed at {SEEDED}:{seed_line(seeded)})")

    summary: dict[str, object] = {}
    summary["without-assume"] = check(base, tree, plain, "pristine, without [assume]")
    summary["with-assume"] = check(base, tree, assumed, "pristine, with [assume]")
    without, with_ = closure_sizes(base, tree, plain), closure_sizes(base, tree, assumed)
    print("\n===== predicted import-time closure (modules and functions), without -> with [assume]")
    for module in LIGHT:
        print(f"  {module:40s} {without[module]:5d} -> {with_[module]:5d}")
    summary["closures"] = {m: [without[m], with_[m]] for m in LIGHT}
    summary["seeded"] = check(base, seeded, seeded / "policy-presets.toml", "seeded, with [assume]")
    worker = tree / "policy-presets-worker-no-assume.toml"
    worker.write_text(policy_toml(False, (EXTRA,)))
    summary["worker-without-assume"] = check(base, tree, worker, f"{EXTRA}, without [assume]")
    worker = tree / "policy-presets-worker.toml"
    worker.write_text(policy_toml(True, (EXTRA,)))
    summary["worker-with-assume"] = check(base, tree, worker, f"{EXTRA}, with [assume]")
    total = time.perf_counter() - started
    summary["total_wall_s"] = round(total, 2)
    print(f"\nwall time of the whole script: {total:.1f} s")
    if args.summary_json:
        Path(args.summary_json).write_text(json.dumps(summary, indent=2) + "\n")
    seeded_found = summary["seeded"]
    ok = isinstance(seeded_found, dict) and seeded_found["exit"] == 1
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
