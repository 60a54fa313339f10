"""The torch-cuda preset on vLLM 0.33.0 with an interpreter that has torch installed (issue 25).

Usage::

    nice -n 10 python benchmarks/vllm_presets_torch.py [--importpolicy CMD] [--json PATH]

The same light modules and ``[assume]`` facts as ``benchmarks/vllm_presets.py`` (the six of issue 17),
``extends = ["torch-cuda"]``, no ``[heavy]``; unlike that script, ``[settings] interpreter`` is the
venv of ``benchmarks/real_env.py`` (torch 2.13.0+cpu, transformers, numpy; made once under
``<bench cache>/real_env/``) and ``external = "follow"``, so torch's, transformers' and numpy's own
import-time code is read and any call of a preset entry inside them is a finding too. vLLM's source
is the 0.33.0 wheel unpacked by ``fetch.py`` (never installed).

It prints each finding (IPL001) with its chain, then the counts: violations, light modules with a
violation, IPL006 blocks. The output is deterministic (no times, paths relative to the tree and to
the venv); the wall time goes to stderr. docs/performance.md ("torch-cuda with torch installed")
says, for every finding, whether the chain really runs at import time.
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
from common import measure, script  # noqa: E402
from fetch import fetch_wheel_tree  # noqa: E402
from real_env import venv_python  # noqa: E402
from vllm_presets import ASSUME, EXTRA, LIGHT, NAME, VERSION  # noqa: E402

RUNS = (
    ("six light modules, without [assume]", LIGHT, False),
    ("six light modules, with [assume]", LIGHT, True),
    (f"{EXTRA}, without [assume]", (EXTRA,), False),
    (f"{EXTRA}, with [assume]", (EXTRA,), True),
)
"""The checks, as ``benchmarks/vllm_presets.py`` makes them: (label, light modules, with [assume])."""


def policy_toml(interpreter: Path, modules: tuple[str, ...], assume: bool) -> str:
    light = "".join(
        f'\n[light."{module}"]\nreason = "imported by the API server or the engine before it forks '
        'workers: CUDA must not be initialised at import time"\n'
        for module in modules
    )
    return (
        f"# Issue 25: vLLM {VERSION}, the torch-cuda preset, torch installed in the interpreter.\n"
        'extends = ["torch-cuda"]\n\n[settings]\nsource-roots = ["."]\n'
        f"interpreter = {json.dumps(str(interpreter))}\nexternal = \"follow\"\n"
        + (("\n" + ASSUME) if assume else "") + light
    )


def findings(text: str, tree: Path, venv: Path) -> tuple[list[str], int]:
    """The IPL001 blocks of the text output (paths made relative), and the number of IPL006 blocks."""
    blocks: list[list[str]] = []
    unresolved = 0
    keep = False
    for line in text.splitlines():
        if line and not line.startswith(" "):
            keep = " IPL001 " in line
            unresolved += " IPL006 " in line
            if keep:
                blocks.append([])
        if keep and line.strip():
            blocks[-1].append(line.replace(str(tree) + "/", "").replace(str(venv) + "/", "<venv>/"))
    return ["\n".join(block) for block in blocks], unresolved


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--importpolicy", help="command to run (default: the script next to this "
                        "interpreter)")
    parser.add_argument("--json", metavar="PATH", help="also write the findings as JSON")
    args = parser.parse_args(argv)
    base = shlex.split(args.importpolicy) if args.importpolicy else [script("importpolicy")]
    started = time.perf_counter()
    python = venv_python()
    venv = python.parent.parent
    tree = fetch_wheel_tree(NAME, VERSION)
    print(f"vLLM {VERSION}, torch-cuda preset, interpreter: <venv>/bin/python (torch 2.13.0+cpu), "
          'external = "follow"')
    summary: list[dict[str, object]] = []
    for number, (label, modules, assume) in enumerate(RUNS):
        policy = tree / f"policy-presets-torch-{number}.toml"
        policy.write_text(policy_toml(python, modules, assume))
        cmd = [*base, "check", "--no-cache", "--policy", str(policy)]
        result = measure(cmd, cwd=tree, env=dict(os.environ), peak=False)
        blocks, unresolved = findings(result.stdout, tree, venv)
        print(f"\n===== {label}")
        for block in blocks:
            print(block)
        offenders = sorted({block.split(" light module ", 1)[1].split(" ", 1)[0]
                            for block in blocks if " light module " in block})
        print(f"--- exit {result.returncode}: {len(blocks)} violations in {len(offenders)} of "
              f"{len(modules)} light modules; {unresolved} IPL006 blocks not shown")
        if result.stderr.strip():
            print("--- stderr ---\n" + result.stderr.strip().replace(str(tree) + "/", ""))
        summary.append({"run": label, "exit": result.returncode, "violations": blocks,
                        "ipl006": unresolved})
    print(f"wall time: {time.perf_counter() - started:.1f} s", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
