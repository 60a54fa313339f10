"""The repository's name for the mypy plugin: a re-export of :mod:`flake8_importpolicy.mypy`.

Kept as the design's ``mypy_plugin/`` folder for work in the repository; the distribution does not
install it (a top-level ``mypy_plugin`` would shadow a project's own module of that name). Users name
``flake8_importpolicy.mypy`` in ``plugins =`` (docs/mypy.md).
"""

from __future__ import annotations

from flake8_importpolicy.mypy import IMPORT_POLICY, SECTION, ImportPolicyPlugin, plugin

__all__ = ["IMPORT_POLICY", "SECTION", "ImportPolicyPlugin", "plugin"]
