"""Names of the files and directories the tool looks for and writes, in one place.

Standard library only and free of logic: the loader, policy discovery and the warm paths (which must
not import the loader) all read them from here.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "BASELINE_FILENAME",
    "CACHE_TAG",
    "CACHE_TAG_TEXT",
    "DEFAULT_CACHE_DIR",
    "POLICY_FILENAME",
    "PYPROJECT_FILENAME",
    "PYPROJECT_TABLE",
]

POLICY_FILENAME: Final = "policy.toml"
"""A policy file of its own."""
PYPROJECT_FILENAME: Final = "pyproject.toml"
"""A ``pyproject.toml`` holds a policy in the table :data:`PYPROJECT_TABLE`."""
PYPROJECT_TABLE: Final = "tool.importpolicy"
DEFAULT_CACHE_DIR: Final = ".importpolicy_cache"
"""``settings.cache-dir`` when the policy sets none, relative to the policy file's directory."""
CACHE_TAG: Final = "CACHEDIR.TAG"
"""The cache directory tag (https://bford.info/cachedir/) that marks a directory as the cache's."""
CACHE_TAG_TEXT: Final = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by flake8-importpolicy.\n"
    "# For information about cache directory tags, see https://bford.info/cachedir/\n"
)
"""What the tool writes into :data:`CACHE_TAG`; a directory is the tool's cache only if its tag is a
regular file with exactly this text."""
BASELINE_FILENAME: Final = "importpolicy-baseline.json"
"""Where ``importpolicy check --write-baseline`` writes when given no file: beside the policy."""
