"""The one table of diagnostic codes, shared by the CLI, the flake8 checker and the mypy plugin.

Each :class:`Code` carries its id (``IPL001``), a slug (``light-imports-heavy``), a message template
(``str.format`` fields named in the template) and a one-line summary. Its help, for SARIF rules, is its
section of ``docs/codes.md``, written there only (:mod:`flake8_importpolicy.codes_help` is generated
from it and loaded only when asked).
"""

from __future__ import annotations

from typing import Final, NoReturn


class Code:
    """One diagnostic code. There is one instance per code, the constants below (so identity is
    equality); it is read-only.

    A plain class, not a frozen dataclass: every check, warm or cold, imports the table, and creating
    a frozen dataclass costs more than the rest of this module (docs/performance.md, "What the cold
    path avoids").

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

    __slots__ = ("id", "slug", "template", "summary", "finding", "call_template")

    id: str
    slug: str
    template: str
    summary: str
    finding: bool
    call_template: str

    def __init__(
        self, id: str, slug: str, template: str, summary: str, *, finding: bool = True,
        call_template: str = "",
    ) -> None:
        for name, value in (("id", id), ("slug", slug), ("template", template),
                            ("summary", summary), ("finding", finding),
                            ("call_template", call_template)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __repr__(self) -> str:
        return f"Code({self.id!r}, {self.slug!r})"

    def __reduce__(self) -> tuple[object, tuple[str]]:
        """Copied or pickled, a code is the table's own instance."""
        return _code_by_id, (self.id,)

    @property
    def help(self) -> str:
        """The code's section of ``docs/codes.md`` (Markdown, without its heading; ``""`` if it has
        none): SARIF rules carry it as ``help`` and its "What it does" paragraph as
        ``fullDescription``."""
        from flake8_importpolicy.codes_help import HELP  # SARIF only: the docs' text is long

        return HELP.get(self.id, "")

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
    "light pattern {pattern!r} matches no module{hint}",
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
IPL006: Final = Code(
    "IPL006",
    "unresolved-import-time-code",
    "light module {light} runs import-time code that cannot be resolved: {construct} {detail}",
    "Import-time code on a light module's path cannot be resolved statically.",
)
IPL007: Final = Code(
    "IPL007",
    "stale-forbid-entry",
    "{key} entry {entry!r} names no {names}{hint}",
    "A forbid or allow entry, or a [heavy] or [heavy-calls] key, names no module or function.",
)
IPL008: Final = Code(
    "IPL008",
    "import-budget-exceeded",
    "light module {light} runs {count} modules at import time, over its budget of "
    "max-modules = {limit}; most through: {contributors}",
    "A light module's import-time closure is larger than its max-modules budget.",
)
IPL009: Final = Code(
    "IPL009",
    "stale-baseline-entry",
    "baseline entry {entry} no longer occurs; remove it with importpolicy check --write-baseline",
    "An entry of the baseline file matches no finding any more.",
)
IPL900: Final = Code(
    "IPL900",
    "policy-error",
    "{message}",
    "The policy cannot be loaded (missing, not TOML, or invalid).",
    finding=False,
)

CODES: Final[tuple[Code, ...]] = (
    IPL001, IPL002, IPL003, IPL004, IPL005, IPL006, IPL007, IPL008, IPL009, IPL900
)
"""Every code, in id order."""

BY_ID: Final[dict[str, Code]] = {code.id: code for code in CODES}


def _code_by_id(id: str) -> Code:
    return BY_ID[id]
