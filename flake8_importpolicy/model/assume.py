"""An ``[assume]`` entry of a policy as a value (docs/policy.md, ``[assume]``).

Its own module: a policy without ``[assume]`` never loads it (each frozen dataclass costs import time
on every cold run).
"""

from __future__ import annotations

from dataclasses import dataclass

from flake8_importpolicy.model.facts import assumption_text

__all__ = ["Assumption"]


@dataclass(frozen=True)
class Assumption:
    """An ``[assume]`` entry: a fact about the runtime the analysed code will run in, used wherever the
    engine evaluates a condition (docs/policy.md, ``[assume]``).

    Attributes:
        key: for an ``[assume]`` entry, the dotted name or call in canonical form
            (:func:`flake8_importpolicy.model.patterns.canonical_assumption_key`:
            ``vllm.platforms.current_platform.is_rocm()``, ``vllm.envs.VLLM_USE_V1``); for an
            ``[assume.environ]`` entry, the environment variable's name.
        value: the assumed value: a bool, str or int; for an environment variable its string value,
            or None for "not set" (``false`` in the policy).
        environ: True for an ``[assume.environ]`` entry.
        source: as :attr:`HeavyRule.source`.
    """

    key: str
    value: bool | str | int | None
    environ: bool = False
    source: str = ""

    @property
    def text(self) -> str:
        """The entry as a policy writes it: ``"x.is_rocm()" = false``, ``environ."VAR" = "1"``
        (:func:`~flake8_importpolicy.model.facts.assumption_text`)."""
        return assumption_text(self.key, self.value, self.environ)

    @property
    def label(self) -> str:
        """How ``verify`` names the entry: ``[assume] "x()" = false`` (with ``[from <source>]`` for an
        entry of a base)."""
        shown = f"[assume] {self.text}"
        return f"{shown} [from {self.source}]" if self.source else shown
