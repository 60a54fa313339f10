"""The draft ``policy.toml`` of ``importpolicy suggest`` and its JSON form. Functions return text
and print nothing; the same suggestion always gives the same bytes."""

from __future__ import annotations

import json
import os
from pathlib import Path

from flake8_importpolicy import docs_url
from flake8_importpolicy.model.suggestion import HeavyCandidate, LightCandidate, Suggestion
from flake8_importpolicy.output.render import plural, single_line

__all__ = ["format_suggestion_json", "format_suggestion_toml"]


def _string(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(single_line(text))


def _relative(path: Path, directory: Path) -> str:
    try:
        return os.path.relpath(path, directory).replace(os.sep, "/")
    except ValueError:  # another drive
        return str(path)


def _interpreter(path: Path, directory: Path) -> str:
    """The draft's ``interpreter``: relative to ``directory`` when inside it (a checkout's
    ``.venv``), else absolute."""
    return _relative(path, directory) if path.is_relative_to(directory) else path.as_posix()


def format_suggestion_toml(suggestion: Suggestion, directory: Path) -> str:
    """The draft policy for a file in ``directory``: ``extends`` (the existing policy, ``heavy-ml``
    when its modules are imported), ``[settings]`` (without an existing policy), ``[heavy]`` with
    the first-party heavy candidates, then one ``[light."…"]`` table per light candidate, best score
    first, each with comments giving its numbers."""
    out = [
        f"# Draft policy written by importpolicy suggest from "
        f"{plural(suggestion.modules, 'first-party module')} (read, never imported).",
        "# Keep the light modules that must stay light and say why in each reason; delete the rest.",
        "# Then record today's findings: importpolicy check --write-baseline (how to adopt it:",
        f"# {docs_url('adopt.md')}).",
        "# Light candidates: top-level packages, then console-script modules, then the others, each",
        "# group ranked by score = (1 + importers) x weight / (1 + closure); closures",
        "# are predicted from module-level imports and counted as max-modules counts (exact count:",
        "# importpolicy why MODULE --format json).",
    ]
    if suggestion.policy is not None:
        out.append(f"# Additions to {_relative(suggestion.policy, directory)}, which this file "
                   "extends: copy what you keep into it, or use this file as the policy.")
    out.append("version = 1")
    extends = []
    if suggestion.policy is not None:
        extends.append(_relative(suggestion.policy, directory))
    ml = [c for c in suggestion.heavy if c.why == "heavy-ml"]
    if ml:
        extends.append("heavy-ml")
    if extends:
        line = f"extends = [{', '.join(_string(e) for e in extends)}]"
        if ml:
            line += f"  # heavy-ml modules imported: {', '.join(c.module for c in ml)}"
        out.append(line)
    if suggestion.dropped:
        left = ", ".join(f"{preset}'s {_string(entry)}" for preset, entry in suggestion.dropped)
        out.append(f"# Left out: {left} ({_dropped_why(suggestion)}).")
    if suggestion.policy is None or suggestion.interpreter is not None:
        out += ["", "[settings]"]
    if suggestion.policy is None:
        roots = ", ".join(_string(_relative(root, directory)) for root in suggestion.source_roots)
        out += [f"source-roots = [{roots}]"]
    if suggestion.interpreter is not None:
        # the interpreter decides what third-party imports resolve to: the project's own
        out += [f"interpreter = {_string(_interpreter(suggestion.interpreter, directory))}"]
    first_party = [c for c in suggestion.heavy if c.why == "large-closure"]
    if first_party:
        out += [
            "",
            "# Heavy candidates: first-party modules whose own import-time closure counts "
            f"{suggestion.threshold} modules or more",
            "# (predicted from module-level imports), one per heavy region of the import graph.",
            "[heavy]",
        ]
        out.extend(f"{_string(c.module)} = {_string(_heavy_reason(c))}" for c in first_party)
    if not suggestion.light:
        out += ["", f"# No light candidate (see {docs_url('adopt.md')} for what makes one)."]
    for number, candidate in enumerate(suggestion.light, start=1):
        out += [""]
        out.extend(f"# {line}" for line in _light_comment(number, candidate))
        out += [
            f"[light.{_string(candidate.module)}]",
            f"reason = {_string(_light_reason(candidate))}",
        ]
        out.extend(_forbid_lines(candidate))
    return "\n".join(out) + "\n"


def _dropped_why(suggestion: Suggestion) -> str:
    return ("names this project's own package" if len(suggestion.dropped) == 1
            else "each names this project's own package") + (
        "; a preset entry never applies to the project's own modules")


def _heavy_reason(candidate: HeavyCandidate) -> str:
    return (f"TODO: why light modules must not import it (import-time closure of about "
            f"{candidate.closure} modules; imported by {plural(candidate.importers, 'module')})")


def _light_reason(candidate: LightCandidate) -> str:
    return "TODO: why it must stay light"


def _forbid_lines(candidate: LightCandidate) -> list[str]:
    """A candidate's drafted ``forbid``: every heavy pattern, those it reaches today marked, for the
    user to delete what the module may import (what stays is then checked, and today's findings go
    to the baseline)."""
    if not candidate.forbid:
        return []
    reached = set(candidate.reaches)
    return [
        "# what it must not import: delete what it may (it reaches the marked ones today)",
        "forbid = [",
        *(f"    {_string(p)},{'  # reached today' if p in reached else ''}" for p in candidate.forbid),
        "]",
    ]


def _light_comment(number: int, candidate: LightCandidate) -> list[str]:
    kinds = [
        "package __init__" if why == "package" else f"named by {', '.join(candidate.entry_points)}"
        for why in candidate.why if why != "imported"
    ]
    reaches = (f"reaches {', '.join(candidate.reaches)} today" if candidate.reaches
               else "reaches no heavy candidate")
    return [
        f"{number}. score {candidate.score:g}: "
        + "; ".join([*kinds, f"imported by {plural(candidate.importers, 'module')}"]),
        f"   predicted import-time closure: {plural(candidate.closure, 'module')}; {reaches}",
    ]


def format_suggestion_json(suggestion: Suggestion, directory: Path) -> str:
    """``suggest --format json``: ``{"modules", "threshold", "policy", "known_light", "light":
    [{"module", "path", "why", "importers", "score", "closure", "reaches", "entry_points",
    "forbid"}],
    "heavy": [{"module", "why", "closure", "importers", "reason"}], "dropped": [{"preset",
    "entry", "why"}], "interpreter"}``, paths relative to ``directory``."""
    return json.dumps({
        "modules": suggestion.modules,
        "threshold": suggestion.threshold,
        "policy": _relative(suggestion.policy, directory) if suggestion.policy else None,
        "known_light": list(suggestion.known_light),
        "light": [
            {
                "module": c.module,
                "path": _relative(c.path, directory) if c.path else None,
                "why": list(c.why),
                "importers": c.importers,
                "score": c.score,
                "closure": c.closure,
                "reaches": list(c.reaches),
                "entry_points": list(c.entry_points),
                "forbid": list(c.forbid),
            }
            for c in suggestion.light
        ],
        "heavy": [
            {"module": c.module, "why": c.why, "closure": c.closure, "importers": c.importers,
             "reason": c.reason}
            for c in suggestion.heavy
        ],
        "dropped": [
            {"preset": preset, "entry": entry, "why": "names the project's own package"}
            for preset, entry in suggestion.dropped
        ],
        "interpreter": (_interpreter(suggestion.interpreter, directory)
                        if suggestion.interpreter is not None else None),
    }, indent=2, ensure_ascii=False) + "\n"
