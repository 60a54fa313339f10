"""Classes a standard-library factory makes whose construction runs no code of the project
(docs/semantics.md rule 16): calling ``Point`` after ``Point = collections.namedtuple("Point",
"x y")`` runs only the generated ``__new__``, so the call is not a call through a variable."""

from __future__ import annotations

from typing import Final

from flake8_importpolicy.model.facts import CallBinding

__all__ = ["makes_generated_class"]

_FACTORIES: Final = frozenset({
    "collections.namedtuple",
    "typing.NamedTuple", "typing_extensions.NamedTuple",
    "typing.NewType", "typing_extensions.NewType",
    "typing.TypedDict", "typing_extensions.TypedDict",
    "enum.Enum", "enum.IntEnum", "enum.StrEnum", "enum.Flag", "enum.IntFlag",
})
"""Factories whose class runs only generated code when called: a namedtuple's ``__new__``
(``collections/__init__.py`` ``namedtuple`` builds it from ``tuple.__new__``, ``typing.NamedTuple``
calls ``collections.namedtuple``), a ``NewType``'s ``__call__`` (returns its argument), a
``TypedDict``'s (a ``dict``), an enum's functional API (``EnumType.__call__`` looks a member up).
``dataclasses.make_dataclass`` is not one: its ``namespace`` may define ``__post_init__``."""


def makes_generated_class(call: CallBinding | None) -> bool:
    """Whether the module-level call a name was bound to makes such a class (``None``: the name
    was not bound to a call). The functional enum API needs the class name and its members (one
    argument looks a member up instead)."""
    if call is None or call.callee not in _FACTORIES:
        return False
    return not call.callee.startswith("enum.") or len(call.args) + len(call.keywords) >= 2
