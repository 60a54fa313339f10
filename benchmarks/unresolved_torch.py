"""The import-time sites the engine cannot resolve (IPL006) in ``import torch``'s closure (issue 25 item 7).

Usage::

    nice -n 10 python benchmarks/unresolved_torch.py [--module torch] [--importpolicy PATH]
        [--top N] [--json FILE]

The interpreter is the real-environment venv of ``real_env.py`` (torch's CPU wheel, transformers,
numpy; made once under ``<bench cache>/real_env/`` if missing). A temporary policy written as
``differential.py`` writes it (``interpreter`` = that venv's python, ``external = "follow"``, an
empty source root, one ``[light."torch"]``), then::

    importpolicy why torch --policy P --format json --no-cache

and its ``unresolved`` list is counted: in total, per construct, per distribution (the standard
library apart) and construct, and the ``--top`` largest groups of ``call-through-variable`` by the
name called (the first dotted name of the site's text), with one example each. The target of
issue 25 is a total of at most 150.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
import differential  # noqa: E402
import real_env  # noqa: E402

TARGET = 150


def measure(importpolicy: str, python: Path, module: str, timeout: float) -> tuple[dict[str, Any], float]:
    with tempfile.TemporaryDirectory(prefix="ipl-unresolved-") as work:
        base = Path(work)
        (base / "empty-root").mkdir()
        policy = base / "policy.toml"
        policy.write_text(differential.policy_toml(python, ["empty-root"], module))
        argv = [importpolicy, "why", module, "--policy", str(policy), "--format", "json", "--no-cache"]
        print(f"[unresolved] {' '.join(argv)}", file=sys.stderr)
        t0 = time.perf_counter()
        proc = subprocess.run(argv, cwd=work, env=differential.clean_env(), capture_output=True,
                              text=True, timeout=timeout)
        wall = time.perf_counter() - t0
    try:
        return json.loads(proc.stdout), wall
    except ValueError:
        raise SystemExit(f"exit {proc.returncode}: {proc.stderr.strip()[-2000:]}")


def where(path: str) -> str:
    """The distribution directory a site's file is under (``stdlib`` outside site-packages)."""
    head, sep, tail = path.partition("site-packages/")
    return tail.split("/", 1)[0] if sep else "stdlib"


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--module", default="torch", help="the module imported (default: torch)")
    ap.add_argument("--importpolicy", default=None, help="the importpolicy executable under test "
                    "(default: the worktree's .venv/bin/importpolicy, else the running venv's)")
    ap.add_argument("--top", type=int, default=25, metavar="N",
                    help="call-through-variable groups to print (default 25)")
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--json", metavar="FILE", help="write the unresolved list here")
    args = ap.parse_args(argv)

    importpolicy = args.importpolicy or differential.default_importpolicy()
    python = real_env.venv_python()
    data, wall = measure(importpolicy, python, args.module, args.timeout)
    sites: list[dict[str, Any]] = data.get("unresolved", [])
    if args.json:
        Path(args.json).write_text(json.dumps(sites, indent=1))

    by_construct = Counter(s["construct"] for s in sites)
    by_where = Counter((where(s["path"]), s["construct"]) for s in sites)
    distinct = len({(s["path"], s["line"], s["col"], s["construct"]) for s in sites})
    print(f"## Unresolved sites (IPL006) in `import {args.module}`'s closure\n")
    print(f"importpolicy: `{importpolicy}` (engine {differential.engine_location(importpolicy)}); "
          f"interpreter: `{python}`; why {wall:.1f} s\n")
    verdict = "PASS" if len(sites) <= TARGET else "FAIL"
    print(f"total {len(sites)} ({distinct} distinct statements); target <= {TARGET}: {verdict}\n")
    print("| construct | sites |\n|---|---:|")
    for construct, count in by_construct.most_common():
        print(f"| {construct} | {count} |")
    print("\n| where | construct | sites |\n|---|---|---:|")
    for (place, construct), count in by_where.most_common():
        print(f"| {place} | {construct} | {count} |")
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for site in sites:
        if site["construct"] == "call-through-variable":
            match = re.match(r"[\w.]+", site.get("detail") or "")
            groups[match.group(0) if match else (site.get("detail") or "?")[:30]].append(site)
    print(f"\ncall-through-variable, the {args.top} largest groups by the name called:\n")
    print("| called | sites | example |\n|---|---:|---|")
    for name, group in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:args.top]:
        first = group[0]
        example = f"{where(first['path'])} {Path(first['path']).name}:{first['line']} " \
                  f"`{(first.get('detail') or '')[:80]}`"
        print(f"| `{name}` | {len(group)} | {example.replace('|', '/')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
