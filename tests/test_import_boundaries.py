"""Subpackages talk through public names, shared checks live in dpfair._validation, and imports run only down.

The layers are declared once, in ``dpfair._layout`` (the documentation's architecture page draws them from there).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from dpfair import _layout

SRC = Path(__file__).resolve().parents[1] / "src" / "dpfair"
#: top-level modules every subpackage may use, private names included (the shared layer)
SHARED = {"dpfair._validation", "dpfair._warnings", "dpfair._estimator", "dpfair._version", "dpfair._wrapped_fit",
          "dpfair.base"}


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


# ---------------------------------------------------------------------------------------------- layers
#: The layers of the package, lowest first, from ``dpfair._layout`` (the one table the architecture page draws):
#: a unit (a top-level module or a subpackage) imports only units of its own layer or lower ones, and the units
#: form no circle.
LAYERS = _layout.layers()
LAYER = {unit: level for level, units in enumerate(LAYERS) for unit in units}
#: Imports that still run back up, each with the way out (the test fails when one is gone: delete its entry).
TRANSITIONAL: set[tuple[str, str]] = set()


def _type_checking_only(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _import_targets(module: str, path: Path, known: set[str]):
    """``(line, target module)`` of every import of a dpfair module by ``module``, function-level ones included."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    stack = [ast.parse(path.read_text(encoding="utf-8"))]
    while stack:
        node = stack.pop()
        for child in ast.iter_child_nodes(node):
            if not _type_checking_only(child):
                stack.append(child)
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            # ``from package import submodule`` imports the submodule
            targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in known else source for a in node.names]
        else:
            continue
        for target in targets:
            while target not in known and "." in target:  # ``import dpfair.privacy.budget.x``: the module part
                target = target.rpartition(".")[0]
            if target in known:
                yield node.lineno, target


def _module_graph() -> tuple[dict[str, set[str]], dict[tuple[str, str], str]]:
    """``(module -> the dpfair modules it imports, (module, target) -> "file:line")``; a fresh copy of one parse."""
    graph, where = _parsed_graph()
    return {module: set(targets) for module, targets in graph.items()}, dict(where)


@functools.cache
def _parsed_graph() -> tuple[dict[str, set[str]], dict[tuple[str, str], str]]:
    modules = dict(_modules())
    known = set(modules)
    graph: dict[str, set[str]] = {m: set() for m in modules}
    where: dict[tuple[str, str], str] = {}
    for module, path in modules.items():
        for line, target in _import_targets(module, path, known):
            if target != module:
                graph[module].add(target)
                where.setdefault((module, target), f"{path.relative_to(SRC.parent)}:{line}")
    return graph, where


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def _unit(module: str) -> str:
    return _subpackage(module)


def test_every_unit_has_a_layer():
    units = {_unit(m) for m, _ in _modules()}
    assert units <= set(LAYER), f"add a Unit line to dpfair._layout.UNITS for: {sorted(units - set(LAYER))}"
    assert set(LAYER) <= units, f"dpfair._layout.UNITS names units that do not exist: {sorted(set(LAYER) - units)}"


def test_the_architecture_page_names_every_unit_and_layer():
    # the page's picture is drawn from dpfair._layout; its text must name every unit and layer too
    page = (SRC.parents[1] / "docs" / "architecture.rst").read_text(encoding="utf-8")
    missing = [u.module for u in _layout.UNITS if f"``{u.module}``" not in page and f"{u.module}`" not in page]
    assert not missing, f"docs/architecture.rst does not name {missing}"
    assert not [name for name in _layout.LAYER_NAMES if name not in page]


def test_no_import_runs_from_a_lower_layer_to_a_higher_one():
    graph, where = _module_graph()
    upward = [f"{where[(a, b)]} imports {b} (layer {LAYER[_unit(b)]} above {_unit(a)}'s {LAYER[_unit(a)]})"
              for a, targets in graph.items() for b in sorted(targets)
              if LAYER[_unit(b)] > LAYER[_unit(a)] and (a, b) not in TRANSITIONAL]
    assert not upward, "\n".join(upward)


def test_transitional_upward_imports_still_exist():
    graph, _ = _module_graph()
    gone = [edge for edge in TRANSITIONAL if edge[1] not in graph[edge[0]]]
    assert not gone, f"these imports are gone: delete them from TRANSITIONAL: {gone}"


def test_validation_is_the_bottom_layer_and_no_circle_runs_through_it():
    graph, where = _module_graph()
    own = sorted(t for t in graph["dpfair._validation"] if ("dpfair._validation", t) not in TRANSITIONAL)
    assert not own, [where[("dpfair._validation", t)] for t in own]
    pruned = {m: {t for t in targets if (m, t) not in TRANSITIONAL} for m, targets in graph.items()}
    assert not [c for c in _circles(pruned) if "dpfair._validation" in c]


def test_no_import_circle_between_units():
    graph, _ = _module_graph()
    pruned = {m: {t for t in targets if (m, t) not in TRANSITIONAL} for m, targets in graph.items()}
    crossing = [c for c in _circles(pruned) if len({_unit(m) for m in c}) > 1]
    assert not crossing, crossing


def test_the_circle_check_finds_a_circle():
    # the check itself can fail: a back-up arrow from the bottom layer closes a circle through it
    graph, _ = _module_graph()
    graph["dpfair._validation"] = {*graph["dpfair._validation"], "dpfair.privacy.accounting"}
    assert any("dpfair._validation" in c and "dpfair.privacy.accounting" in c for c in _circles(graph))
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


#: Circles inside one unit still to be broken; a new circle fails the test below (none are left).
KNOWN_CIRCLES_INSIDE_A_UNIT: tuple[set[str], ...] = ()


def test_no_new_import_circle_inside_a_unit():
    graph, _ = _module_graph()
    pruned = {m: {t for t in targets if (m, t) not in TRANSITIONAL} for m, targets in graph.items()}
    known = [frozenset(c) for c in KNOWN_CIRCLES_INSIDE_A_UNIT]
    new = [c for c in _circles(pruned) if not any(set(c) <= k for k in known)]
    assert not new, new


# ------------------------------------------------------------------------- the bandit families
#: Inside ``dpfair.bandits``: the shared pieces, then one sub-package per family (docs/architecture.rst).
BANDIT_SHARED = {"dpfair.bandits._numba", "dpfair.bandits._ranks", "dpfair.bandits.ridge", "dpfair.bandits.regret",
                 "dpfair.bandits.results"}
BANDIT_FAMILIES = ("dpfair.bandits.gmf", "dpfair.bandits.fairx")


def _family(module: str) -> str | None:
    return next((f for f in BANDIT_FAMILIES if module == f or module.startswith(f + ".")), None)


def _bandit_layer_problems(graph: dict[str, set[str]]) -> list[str]:
    problems = []
    for module, targets in graph.items():
        if not module.startswith("dpfair.bandits.") or module in BANDIT_FAMILIES:
            continue  # (a family's face re-exports its own modules)
        for target in targets:
            if not target.startswith("dpfair.bandits"):
                continue
            if module in BANDIT_SHARED and target not in BANDIT_SHARED:
                problems.append(f"shared {module} imports {target}")
            elif _family(module) and _family(target) and _family(module) != _family(target):
                problems.append(f"{module} ({_family(module)}) imports the other family's {target}")
            elif target == "dpfair.bandits":
                problems.append(f"{module} imports the package face dpfair.bandits")
    return problems


def test_every_bandit_module_is_shared_or_in_one_family():
    bandit = [m for m, _ in _modules() if m.startswith("dpfair.bandits.")]
    loose = [m for m in bandit if m not in BANDIT_SHARED and _family(m) is None]
    assert not loose, f"put these in bandits/gmf/ or bandits/fairx/, or list them as shared: {loose}"


def test_the_bandit_families_import_only_shared_pieces_and_themselves():
    graph, _ = _module_graph()
    assert not _bandit_layer_problems(graph)
    # the check can fail: a family importing the other one, or a shared piece importing a family, is caught
    graph["dpfair.bandits.gmf.policies"].add("dpfair.bandits.fairx.merit_policy")
    graph["dpfair.bandits.ridge"].add("dpfair.bandits.gmf.simulate")
    assert len(_bandit_layer_problems(graph)) == 2


def test_no_two_bandit_modules_share_a_name_with_a_dpfair_package():
    packages = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    names = [m.rsplit(".", 1)[1] for m, _ in _modules() if m.startswith("dpfair.bandits.")]
    assert not sorted(set(names) & packages)
