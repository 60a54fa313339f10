"""flake8-importpolicy: keep Python packages light at import time.

The core engine (policy, import-time extraction, resolution, graph, chains, reports) lives in this
package and imports neither flake8 nor mypy; the flake8 checker and the mypy plugin are thin adapters.
"""

__version__ = "0.1.0"

REPOSITORY_URL = "https://github.com/flake8-importpolicy/flake8-importpolicy"
"""The project's canonical home (its docs are under ``/blob/main/docs/``): the one place that names it."""


def docs_url(page: str, section: str = "") -> str:
    """The address of one of the repository's docs, for messages read where the docs/ tree is not
    (an installed wheel, the package index page): ``docs_url("policy.md")`` is
    ``REPOSITORY_URL + "/blob/main/docs/policy.md"``; ``section`` is a heading's anchor (GitHub's
    slug: lower case, spaces as hyphens), appended after ``#``. Never raises."""
    anchor = f"#{section}" if section else ""
    return f"{REPOSITORY_URL}/blob/main/docs/{page}{anchor}"
