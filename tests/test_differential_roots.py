"""benchmarks/differential.py's root of a miss (issue 29's "zero silent misses"): a miss with no
missed ancestor by ``parent`` is behind its missed package or a missed module whose code is on its
importing stack, and is silent only when that root is."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

PREDICTED = ("app", "lib", "helpers", "base")
BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def _differential() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_differential_bench", BENCHMARKS / "differential.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _row(bench: ModuleType, importers: dict[str, Any], announced: set[str]) -> Any:
    executed = {name: f"/site/{name.replace('.', '/')}.py" for name in [*importers, *PREDICTED]}
    predicted = {name: executed[name] for name in PREDICTED}
    return bench.Row(
        "app", "1", "app",
        bench.Executed(executed, {}, [], None),
        bench.Prediction(predicted, len(predicted), 0.0, None, {name: [] for name in predicted},
                         announced),
        importers, {}, set(), [],
    )


def _frame(module: str, function: str = "<module>") -> list[Any]:
    return [module, f"/site/{module.replace('.', '/')}.py", 1, function]


def test_a_miss_is_behind_its_missed_package_and_a_missed_module_on_its_stack() -> None:
    bench = _differential()
    importers = {
        # lib's hook (announced by an IPL006 in lib) imports lib.layout, whose own hook is a
        # helper's closure: lib.layout._template's import runs no frame of lib.layout
        "lib.layout": {
            "parent": "app", "frames": [_frame("helpers", "__getattr__"), _frame("lib", "__getattr__")],
        },
        "lib.layout._template": {
            "parent": "app", "frames": [_frame("helpers", "__getattr__"), _frame("app")],
        },
        # a method of a class lib.layout._template defines imports cache
        "cache": {
            "parent": "app", "frames": [_frame("base", "get"), _frame("lib.layout._template", "__init__")],
        },
        # nothing missed near: a root, silent
        "other": {"parent": "app", "frames": [_frame("helpers", "load"), _frame("app")]},
    }
    row = _row(bench, importers, announced={"lib"})
    bench.compare(row, ["/site"])
    by = {miss["module"]: miss for miss in row.misses}
    assert by["lib.layout"]["root"] == "lib.layout" and by["lib.layout"]["announced"]
    assert by["lib.layout._template"]["root"] == "lib.layout"
    assert by["cache"]["root"] == "lib.layout"
    assert by["lib.layout._template"]["announced"] and by["cache"]["announced"]
    assert by["other"]["root"] == "other" and not by["other"]["announced"]
