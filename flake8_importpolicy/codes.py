"""The one table of diagnostic codes, shared by the CLI, the flake8 checker and the mypy plugin.

Each :class:`Code` carries its id (``IPL001``), a slug (``light-imports-heavy``), a message template
(``str.format`` fields named in the template) and a one-line summary used by ``docs/codes.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class Code:
    """One diagnostic code.

    Attributes:
        id: the code as users type it in ``--select`` and ``# noqa:`` (``"IPL001"``).
        slug: a stable kebab-case name (``"light-imports-heavy"``).
        template: the message after the id, a ``str.format`` template.
        summary: one line for the docs and ``--help``.
        finding: True if the code makes ``importpolicy check`` exit 1 (a finding), False for errors
            that make it exit 2 (usage or policy errors).
        call_template: the template used instead when the ``heavy`` field is a call
            (``"torch.cuda.init()"``, from ``[heavy-calls]``); empty if the code has none.
    """

    id: str
    slug: str
    template: str
    summary: str
    finding: bool = True
    call_template: str = ""

    def format(self, *, call: bool = False, **fields: object) -> str:
        """Return ``"<id> <message>"`` with the template filled from ``fields``.

        Args:
            call: the ``heavy`` field names a call of a ``[heavy-calls]`` function: use
                :attr:`call_template` when the code has one.

        Raises:
            KeyError: if a field named in the template is missing.
        """
        template = self.call_template if call and self.call_template else self.template
        return f"{self.id} {template.format(**fields)}"


IPL001: Final = Code(
    "IPL001",
    "light-imports-heavy",
    "light module {light} imports {heavy} at import time ({reason})",
    "A light module imports a forbidden (heavy) module, or calls a heavy function, at import time.",
    call_template="light module {light} calls {heavy} at import time ({reason})",
)
IPL002: Final = Code(
    "IPL002",
    "continues-heavy-chain",
    "this import makes light module {lights} import {heavy} at import time ({reason})",
    "An import in this module continues a reported chain from a light module to a forbidden one.",
    call_template="this makes light module {lights} call {heavy} at import time ({reason})",
)
IPL003: Final = Code(
    "IPL003",
    "stale-light-pattern",
    "light pattern {pattern!r} matches no module",
    "A [light] pattern of the policy matches no module.",
)
IPL004: Final = Code(
    "IPL004",
    "unused-ignore",
    "[[ignore]] entry {import_!r} matches no import in any light module's import-time closure",
    "An [[ignore]] entry of the policy removes no import.",
)
IPL005: Final = Code(
    "IPL005",
    "unanalysable-module",
    "cannot analyse {module} ({problem}); its imports are unknown and the check is incomplete",
    "A module in a light module's import-time closure cannot be read or parsed.",
)
IPL900: Final = Code(
    "IPL900",
    "policy-error",
    "{message}",
    "The policy cannot be loaded (missing, not TOML, or invalid).",
    finding=False,
)

CODES: Final[tuple[Code, ...]] = (IPL001, IPL002, IPL003, IPL004, IPL005, IPL900)
"""Every code, in id order."""

BY_ID: Final[dict[str, Code]] = {code.id: code for code in CODES}
