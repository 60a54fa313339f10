"""Real-input run: vLLM 0.33.0, pristine and with the seeded bug.

Usage::

    python benchmarks/vllm_seed.py [--format json] [--no-cache] [--importpolicy CMD]

Steps:

1. Download and unpack the vllm 0.33.0 wheel with ``fetch.py`` (cached under
   ``~/.cache/flake8-importpolicy``, never inside the repo).
2. Write ``policy.toml`` into the unpacked tree (and into the seeded copy).
3. Make a seeded copy that adds the re-export
   ``from .fused_allreduce_rms_norm import fused_allreduce_rms_norm`` to
   ``vllm/models/common/ops/__init__.py`` directly after its existing import
   (``from .fused_qk_rmsnorm import ...``, line 5 in the release), so the new
   line is line 6.
4. Run ``importpolicy check --policy <tree>/policy.toml`` on both trees,
   printing the output, wall time and peak RSS of each run.

Expected (ground truth, by reading the code): pristine -> no violation;
seeded -> one violation at ``vllm/models/common/ops/__init__.py:6``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import script  # noqa: E402
from fetch import fetch_wheel_tree, seeded_copy  # noqa: E402

NAME = "vllm"
VERSION = "0.33.0"

OPS_INIT = Path("vllm/models/common/ops/__init__.py")
ANCHOR = "from .fused_qk_rmsnorm import"
SEED_LINE = "from .fused_allreduce_rms_norm import fused_allreduce_rms_norm"

POLICY_TOML = """\
# Import-time policy for the vLLM 0.33.0 real-input benchmark.
[settings]
source-roots = ["."]
external = "stop"

[heavy]
"vllm.config" = "imports torch and probes the platform"
"vllm.compilation" = "pulls in torch._dynamo / inductor machinery"
"vllm.lora" = "LoRA layers import the model executor and torch kernels"
"vllm.multimodal" = "imports media decoders and the multimodal registry"

[light."vllm.models.common.ops"]
reason = "imported by the API server before EngineCore forks"

[light."vllm.envs"]
reason = "read by every process at start-up, including the CLI"

[light."vllm.logger"]
reason = "imported by every vllm module; must stay cheap"
"""


def write_policy(tree: Path) -> Path:
    policy = tree / "policy.toml"
    if not policy.exists() or policy.read_text() != POLICY_TOML:
        policy.write_text(POLICY_TOML)
    return policy


def seed_edit(root: Path) -> None:
    """Insert SEED_LINE directly after the existing import in ops/__init__.py."""
    path = root / OPS_INIT
    lines = path.read_text().splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith(ANCHOR):
            # The anchor may span several lines if it is parenthesised.
            j = i
            if "(" in line and ")" not in line:
                while ")" not in lines[j]:
                    j += 1
            lines.insert(j + 1, SEED_LINE + "\n")
            path.write_text("".join(lines))
            return
    raise RuntimeError(f"anchor {ANCHOR!r} not found in {path}")


def seed_line_number(tree: Path) -> int:
    for n, line in enumerate((tree / OPS_INIT).read_text().splitlines(), 1):
        if line.strip() == SEED_LINE:
            return n
    return 0


def run_measured(cmd: list[str], cwd: Path) -> dict:
    """Run *cmd*, returning output, exit code, wall time and peak RSS.

    Peak RSS comes from GNU time when it is installed (exact per-process), else
    from RUSAGE_CHILDREN, which is the maximum over all children waited for so
    far -- so it is only an upper bound after the first run.
    """
    argv = list(cmd)
    time_file = None
    if os.path.exists("/usr/bin/time"):
        import tempfile

        fd, time_file = tempfile.mkstemp(prefix="ip-time-", suffix=".txt")
        os.close(fd)
        argv = ["/usr/bin/time", "-v", "-o", time_file] + argv
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # every benchmark runs with bytecode caching on
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    peak_kib = None
    if time_file:
        with open(time_file) as fh:
            for line in fh:
                if "Maximum resident set size" in line:
                    peak_kib = int(line.rsplit(":", 1)[1])
        os.unlink(time_file)
    if peak_kib is None:
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
    return {
        "cmd": cmd,
        "returncode": proc.returncode,
        "stdout": proc.stdout,
        "stderr": proc.stderr,
        "wall_s": wall,
        "peak_rss_mib": peak_kib / 1024,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--format", choices=["text", "json"], default=None,
                    help="passed through to importpolicy check")
    ap.add_argument("--no-cache", action="store_true", help="passed through to importpolicy check")
    ap.add_argument("--importpolicy", default=None,
                    help="command to run (default: the importpolicy script next to this "
                         "interpreter, never a pyenv shim)")
    ap.add_argument("--summary-json", metavar="PATH",
                    help="also write the measurements as JSON to PATH")
    args = ap.parse_args(argv)

    pristine = fetch_wheel_tree(NAME, VERSION)
    write_policy(pristine)
    seeded = seeded_copy(pristine, f"{NAME}-{VERSION}-seed-ops-reexport", seed_edit)
    write_policy(seeded)
    print(f"pristine tree: {pristine}")
    print(f"seeded tree:   {seeded} (seed at {OPS_INIT}:{seed_line_number(seeded)})")

    base = shlex.split(args.importpolicy) if args.importpolicy else [script("importpolicy")]
    if shutil.which(base[0]) is None:
        print(f"\ncannot run {base[0]!r}: not found on PATH "
              "(is the importpolicy CLI installed?)", file=sys.stderr)
        return 2
    results = {}
    for label, tree in (("pristine", pristine), ("seeded", seeded)):
        cmd = base + ["check", "--policy", str(tree / "policy.toml")]
        if args.format:
            cmd += ["--format", args.format]
        if args.no_cache:
            cmd.append("--no-cache")
        print(f"\n===== {label}: {shlex.join(cmd)}  (cwd={tree})")
        res = run_measured(cmd, cwd=tree)
        results[label] = res
        sys.stdout.write(res["stdout"])
        if res["stderr"]:
            sys.stdout.write("--- stderr ---\n" + res["stderr"])
        print(f"--- exit {res['returncode']}, wall {res['wall_s']:.2f} s, "
              f"peak RSS {res['peak_rss_mib']:.1f} MiB")

    print("\nsummary:")
    for label, res in results.items():
        print(f"  {label:9s} exit={res['returncode']} wall={res['wall_s']:.2f}s "
              f"peak_rss={res['peak_rss_mib']:.1f}MiB")
    if args.summary_json:
        numbers = {
            label: {k: v for k, v in res.items() if k not in ("stdout", "stderr")}
            for label, res in results.items()
        }
        Path(args.summary_json).write_text(json.dumps(numbers, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
