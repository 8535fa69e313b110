"""No import cycles in pysynth: between modules, and between top-level subpackages.

The graph comes from the AST of every module under ``pysynth/`` (and ``kernels/``, shipped as
``pysynth.kernels``): every ``import`` / ``from ... import`` statement, those inside functions
included (a lazy import still ties the layers together). The CLI (``*/cli.py``,
``pysynth/cli/**``) is the top layer, allowed to import everything, and left out. The layering
is documented in :mod:`pysynth.models`.
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Optional, Set

ROOT = Path(__file__).resolve().parents[1]
TREES = {"pysynth": ROOT / "pysynth", "pysynth.kernels": ROOT / "kernels"}


def _is_cli(name: str) -> bool:
    parts = name.split(".")
    return parts[-1] == "cli" or (len(parts) > 1 and parts[1] == "cli")


def modules() -> Dict[str, Path]:
    out = {}
    for pkg, base in TREES.items():
        for p in sorted(base.rglob("*.py")):
            rel = p.relative_to(base).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            name = ".".join([pkg] + parts)
            if not _is_cli(name) and "tests" not in parts:
                out[name] = p
    return out


def _resolve(name: str, known: Set[str]) -> Optional[str]:
    """``name`` or its nearest enclosing known module (``pysynth.models.io.load_model`` ->
    ``pysynth.models.io``); None outside pysynth."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(name: str, path: Path, known: Set[str]) -> Set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    is_pkg = path.name == "__init__.py"
    out: Set[str] = set()
    for node in ast.walk(tree):
        targets: List[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            # ``from pkg import sub`` imports the module pkg.sub when there is one
            targets = [f"{mod}.{a.name}" for a in node.names] + [mod]
            targets = [t for t in targets if t in known] or [mod]
        for t in targets:
            r = _resolve(t, known)
            if r is not None and r != name and not _is_cli(r):
                out.add(r)
    return out


def graph() -> Dict[str, Set[str]]:
    mods = modules()
    known = set(mods) | {n for n in _all_names() if _is_cli(n)}
    return {n: imports_of(n, p, known) for n, p in mods.items()}


def _all_names() -> Set[str]:
    names = set()
    for pkg, base in TREES.items():
        for p in base.rglob("*.py"):
            parts = list(p.relative_to(base).with_suffix("").parts)
            names.add(".".join([pkg] + (parts[:-1] if parts[-1] == "__init__" else parts)))
    return names


def find_cycle(g: Dict[str, Set[str]]) -> Optional[List[str]]:
    """One cycle of ``g`` (a list of nodes, first == last), or None."""
    WHITE, GREY, BLACK = 0, 1, 2
    color = {n: WHITE for n in g}
    stack: List[str] = []

    def visit(n: str) -> Optional[List[str]]:
        color[n] = GREY
        stack.append(n)
        for m in sorted(g.get(n, ())):
            if color.get(m, BLACK) == GREY:
                return stack[stack.index(m):] + [m]
            if color.get(m) == WHITE:
                c = visit(m)
                if c:
                    return c
        stack.pop()
        color[n] = BLACK
        return None

    for n in sorted(g):
        if color[n] == WHITE:
            c = visit(n)
            if c:
                return c
    return None


def subpackage(name: str) -> str:
    """``pysynth.models.io`` -> ``models``; top-level modules are their own node (``io``);
    ``pysynth`` itself -> ``pysynth``."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def test_graph_covers_the_tree():
    g = graph()
    assert {"pysynth.models.registry", "pysynth.decoding.search", "pysynth.decoding.ort",
            "pysynth.export.onnx", "pysynth.k2q.neural", "pysynth.store"} <= set(g)
    assert "pysynth.decoding.protocol" in g["pysynth.decoding.search"]
    assert not any(_is_cli(n) for n in g)


def test_no_module_cycle():
    cycle = find_cycle(graph())
    assert cycle is None, "import cycle between modules: " + " -> ".join(cycle)


def test_no_subpackage_cycle():
    g = graph()
    sg: Dict[str, Set[str]] = {}
    for n, deps in g.items():
        s = subpackage(n)
        sg.setdefault(s, set()).update(subpackage(d) for d in deps if subpackage(d) != s)
    cycle = find_cycle(sg)
    assert cycle is None, "import cycle between pysynth subpackages: " + " -> ".join(cycle)


def test_models_import_no_method_package():
    g = graph()
    methods = ("k2q", "retrieval", "pipelines", "filtering", "ranking", "sampling")
    bad = sorted((n, d) for n, deps in g.items() if subpackage(n) in ("models", "decoding", "export")
                 for d in deps if subpackage(d) in methods)
    assert bad == [], f"the model stack imports method packages: {bad}"


def test_decoding_is_below_models():
    """The searches and backends are generic over the backend protocol (see pysynth.models)."""
    g = graph()
    bad = sorted((n, d) for n, deps in g.items() if subpackage(n) == "decoding"
                 for d in deps if subpackage(d) in ("models", "export"))
    assert bad == [], bad


def test_cycle_finder_finds_cycles():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
