"""Where the import-time walker is and what the statements it visits run under (docs/semantics.md
rules 8-13): one value the walker owns and updates, and the recorders read when they stamp what
they record (an import site's guard and ``[assume]`` entries, a call's qualified name)."""

from __future__ import annotations

from flake8_importpolicy.analysis.importtime.bindings import Scope
from flake8_importpolicy.model.facts import EnvironWrite

__all__ = ["Flow", "Requirement"]

Requirement = tuple[tuple[str, ...], bool]
"""An import guard (rule 12): the modules, and whether they must be found for the code to run."""


class Flow:
    """The walker's flow state. A plain class with slots: it is read on every site and call.

    Attributes:
        in_function: set for the walker of a function body (analysed as if the function were
            called); ``function_name`` is that function's qualified name.
        class_depth: how many class bodies the statement being visited is in; ``class_path``
            their names, outermost first; ``dataclass_depth`` 1 in the body of a class whose
            decorator evaluates its annotations.
        requirement: the import guard of the statements being visited (rule 12).
        assumed: the ``[assume]`` entries that decided the conditions they run under.
        after: the top-level packages of the eager imports made before them in their block and
            the enclosing ones (rule 12: if one is not installed, CPython raised there).
        loaded: the modules the ``"X" in sys.modules`` tests they run under need imported first.
        when: ``(name, truth)`` of names other modules bind that the undecided tests they run under
            depend on alone (:attr:`~flake8_importpolicy.model.facts.ImportSite.when`).
        line: the line of the statement being visited.
        names: the innermost scope names are bound in (a class body's, or the walker's own).
        raises: how many ``raise`` statements the walk has reached (a ``try``'s ``else`` after a
            body that reached one may not run).
        environ: the environment variables the scope's code set or removed so far
            (:class:`~flake8_importpolicy.analysis.importtime.environ.EnvironWrites`), each once.
    """

    __slots__ = (
        "after", "assumed", "class_depth", "class_path", "dataclass_depth", "environ",
        "function_name", "in_function", "line", "loaded", "names", "raises", "requirement", "when",
    )

    def __init__(self, scope: Scope, *, in_function: bool = False, function_name: str = "") -> None:
        self.names = scope
        self.in_function = in_function
        self.function_name = function_name
        self.class_depth = 0
        self.class_path: list[str] = []
        self.dataclass_depth = 0
        self.requirement: Requirement | None = None
        self.assumed: tuple[str, ...] = ()
        self.after: tuple[str, ...] = ()
        self.loaded: tuple[str, ...] = ()
        self.when: tuple[tuple[str, bool], ...] = ()
        self.line = 0
        self.raises = 0
        self.environ: tuple[EnvironWrite, ...] = ()

    def module_level(self) -> bool:
        """Whether the statement being visited runs in the module's own namespace."""
        return self.class_depth == 0 and not self.in_function

    def assumed_once(self) -> tuple[str, ...]:
        """The ``[assume]`` entries the statement being visited runs under, each once."""
        return tuple(dict.fromkeys(self.assumed)) if self.assumed else ()

    def scoped_name(self, name: str) -> str:
        """The qualified name of ``name`` defined where the walker is."""
        if self.in_function:
            return ".".join([f"{self.function_name}.<locals>", *self.class_path, name])
        return ".".join([*self.class_path, name])
