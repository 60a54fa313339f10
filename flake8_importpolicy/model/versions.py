"""The Python versions a check can target: one rule for ``settings.target-versions`` and
``--target-version`` (standard library only: the command line parses its options with it)."""

from __future__ import annotations

import json
import re
from typing import Final

__all__ = ["parse_target_version"]

_VERSION_RE: Final = re.compile(r"(\d+)\.(\d+)")


def parse_target_version(text: str) -> tuple[int, int]:
    """``(major, minor)`` of a target version written ``"X.Y"``.

    Raises:
        ValueError: with the message to show after the key or option (``'"2.7" is not supported;
            only Python 3 versions ("3.Y") can be targeted'``).
    """
    quoted = json.dumps(text, ensure_ascii=False)  # as the policy loader quotes values
    match = _VERSION_RE.fullmatch(text)
    if match is None:
        raise ValueError(f'{quoted} is not a Python version; write "X.Y", e.g. "3.11"')
    major, minor = int(match.group(1)), int(match.group(2))
    if major != 3:
        raise ValueError(f'{quoted} is not supported; only Python 3 versions ("3.Y") can be targeted')
    return major, minor
