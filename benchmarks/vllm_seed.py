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
import shlex
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import CODEBASES, bench_env, measure, render_policy, script, vllm_light  # noqa: E402
from fetch import fetch_wheel_tree, seeded_copy  # noqa: E402

NAME = "vllm"
VERSION = "0.33.0"

OPS_INIT = Path("vllm/models/common/ops/__init__.py")
ANCHOR = "from .fused_qk_rmsnorm import"
SEED_LINE = "from .fused_allreduce_rms_norm import fused_allreduce_rms_norm"

POLICY_TOML = render_policy(
    vllm_light("vllm.models.common.ops", "vllm.envs", "vllm.logger"), CODEBASES["vllm"].heavy,
    header="Import-time policy for the vLLM 0.33.0 real-input benchmark.",
)


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
    """Run *cmd* (:func:`common.measure`), returning output, exit code, wall time and peak RSS."""
    run = measure(cmd, cwd=cwd, env=bench_env())
    return {
        "cmd": cmd,
        "returncode": run.returncode,
        "stdout": run.stdout,
        "stderr": run.stderr,
        "wall_s": run.wall,
        "peak_rss_mib": run.peak_mib,
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
