"""Write again the files made from another one, so that each text is written by hand once:

- ``flake8_importpolicy/schema/policy.schema.json`` and docs/policy.md's key tables, from the
  declaration of the policy's keys (``flake8_importpolicy/config/keys.py``,
  :mod:`flake8_importpolicy.config.reference`);
- ``flake8_importpolicy/codes_help.py`` (each code's help, which SARIF rules carry), from the code's
  section of docs/codes.md (the runtime never reads the docs, which are not installed).

Usage::

    python tools/regenerate.py          # write what is stale
    python tools/regenerate.py --check  # exit 1 and name what is stale, writing nothing

tests/test_schema.py and tests/test_codes.py run the check.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from flake8_importpolicy.config.reference import format_schema, replace_key_tables  # noqa: E402

SCHEMA = REPO / "flake8_importpolicy" / "schema" / "policy.schema.json"
POLICY_DOC = REPO / "docs" / "policy.md"
CODES_DOC = REPO / "docs" / "codes.md"
CODES_HELP = REPO / "flake8_importpolicy" / "codes_help.py"

_SECTION_RE = re.compile(r"^## (IPL\d{3}) [a-z0-9-]+\n\n(.*?)(?=\n## |\Z)", re.DOTALL | re.MULTILINE)

_HELP_HEADER = '''\
"""Each code's help: its section of docs/codes.md (Markdown, without the heading), which SARIF rules
carry (:attr:`flake8_importpolicy.codes.Code.help`). Loaded only for them.

Generated from docs/codes.md by tools/regenerate.py: edit the docs, then run it (tests/test_codes.py
checks that this file is current).
"""

from typing import Final

HELP: Final[dict[str, str]] = {
'''


def code_sections(markdown: str) -> dict[str, str]:
    """Each code's section of docs/codes.md, by code: the text after its ``## IPLnnn slug`` heading
    up to the next heading, without the blank lines that end it."""
    return {match.group(1): match.group(2).rstrip("\n") for match in _SECTION_RE.finditer(markdown)}


def format_help_module(markdown: str) -> str:
    """``codes_help.py``'s text for the docs/codes.md ``markdown``."""
    parts = [_HELP_HEADER]
    for code, section in code_sections(markdown).items():
        literal = section.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
        parts.append(f'    "{code}": """\\\n{literal}""",\n')
    parts.append("}\n")
    text = "".join(parts)
    namespace: dict[str, object] = {}
    exec(compile(text, str(CODES_HELP), "exec"), namespace)  # the module must say what the docs say
    assert namespace["HELP"] == code_sections(markdown)
    return text


def expected_files() -> dict[Path, str]:
    """Each generated file and the text it should have."""
    return {
        SCHEMA: format_schema(),
        POLICY_DOC: replace_key_tables(POLICY_DOC.read_text(encoding="utf-8")),
        CODES_HELP: format_help_module(CODES_DOC.read_text(encoding="utf-8")),
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
