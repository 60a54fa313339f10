"""Write again the files made from another one, so that each text is written by hand once:
``flake8_importpolicy/schema/policy.schema.json`` and docs/policy.md's key tables, from the declaration
of the policy's keys (``flake8_importpolicy/config/keys.py``, :mod:`flake8_importpolicy.config.reference`).

Usage::

    python tools/regenerate.py          # write what is stale
    python tools/regenerate.py --check  # exit 1 and name what is stale, writing nothing

tests/test_declaration.py runs the check.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from flake8_importpolicy.config.reference import format_schema, replace_key_tables  # noqa: E402

SCHEMA = REPO / "flake8_importpolicy" / "schema" / "policy.schema.json"
POLICY_DOC = REPO / "docs" / "policy.md"


def expected_files() -> dict[Path, str]:
    """Each generated file and the text it should have."""
    return {
        SCHEMA: format_schema(),
        POLICY_DOC: replace_key_tables(POLICY_DOC.read_text(encoding="utf-8")),
    }


def find_stale() -> list[Path]:
    """The generated files whose text is not what their source makes."""
    return [path for path, text in expected_files().items()
            if not path.is_file() or path.read_text(encoding="utf-8") != text]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a file is stale")
    args = parser.parse_args(argv)
    stale = find_stale()
    for path in stale:
        shown = path.relative_to(REPO)
        if args.check:
            print(f"{shown} is stale: run python tools/regenerate.py", file=sys.stderr)
        else:
            path.write_text(expected_files()[path], encoding="utf-8")
            print(f"wrote {shown}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
