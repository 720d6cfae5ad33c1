"""Issue 22: subpackages talk through public names; shared checks live in dpfair._validation."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "dpfair"
#: top-level modules every subpackage may use, private names included (the shared layer)
SHARED = {"dpfair._validation", "dpfair._estimator", "dpfair._version", "dpfair._wrapped_fit", "dpfair.base"}


def _modules():
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts), path


def _subpackage(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else module


def test_no_private_name_crosses_a_subpackage_boundary():
    problems = []
    for module, path in _modules():
        here = _subpackage(module)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or node.level or not (node.module or "").startswith("dpfair"):
                continue
            target = node.module
            if _subpackage(target) == here or target in SHARED or _subpackage(target) in SHARED:
                continue
            private_module = any(part.startswith("_") for part in target.split(".")[1:])
            private_names = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
            if private_module or private_names:
                problems.append(f"{path.relative_to(SRC.parent)}:{node.lineno} imports {target} {private_names or ''}")
    assert not problems, "\n".join(problems)


def test_bounds_array_and_interval_checks_exist_only_in_validation():
    names = ("check_bounds", "_check_bounds", "real_array", "as_real_array", "_beta", "check_open_interval",
             "_check_open_unit", "_check_interval")
    found = []
    for module, path in _modules():
        if module == "dpfair._validation":
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:  # module-level functions (methods check data)
            if isinstance(node, ast.FunctionDef) and node.name in names:
                found.append(f"{path.relative_to(SRC.parent)}:{node.lineno} defines {node.name}")
    assert not found, "\n".join(found)
