"""The import rules of pysynth (issue 25): no cycles, methods are siblings, layers point down,
no package reaches into another package's private names.

The graph comes from the AST of every module under ``pysynth/`` (and ``kernels/``, shipped as
``pysynth.kernels``): every ``import`` / ``from ... import`` statement, those inside functions
included (a lazy import still ties the layers together). The layering (docs/platform.md), each
line importing only from the lines below it::

    faces        cli, serve   (the CLI also starts the server)
    methods      k2q | qagen | paraphrase | mqr | dup          (siblings: never import each other)
    toolkit      quality, datasets, data
    model stack  decoding, models, export
    stages       text, sampling, retrieval, filtering, metrics, ranking, kernels
    platform     _dispatch, _validate, io, store, signature, errors, pipelines

Within the stage, model-stack, toolkit and platform lines a package may import a sibling of its
line (``sampling`` uses ``text``); methods and faces may not. Every subpackage and top-level module
must be placed in :data:`LAYERS`, so a new package is classified when it is added.
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


# ---------------------------------------------------------------------------------------- layers

PLATFORM, STAGES, MODEL_STACK, TOOLKIT, METHODS, FACES, CLI, MAIN = range(8)
#: subpackage (or top-level module) -> its line in the layering; the root ``pysynth`` counts as
#: platform (its lazy ``__getattr__`` imports by string)
LAYERS = {
    "pysynth": PLATFORM, "_core": PLATFORM, "_dispatch": PLATFORM, "_validate": PLATFORM, "io": PLATFORM,
    "store": PLATFORM, "signature": PLATFORM, "errors": PLATFORM, "pipelines": PLATFORM, "adapters": PLATFORM,
    "text": STAGES, "sampling": STAGES, "retrieval": STAGES, "filtering": STAGES, "metrics": STAGES,
    "ranking": STAGES, "kernels": STAGES,
    "decoding": MODEL_STACK, "models": MODEL_STACK, "export": MODEL_STACK, "llm": MODEL_STACK,
    "quality": TOOLKIT, "datasets": TOOLKIT, "data": TOOLKIT, "stackexchange": TOOLKIT,
    "k2q": METHODS, "qagen": METHODS, "paraphrase": METHODS, "mqr": METHODS, "dup": METHODS,
    "serve": FACES, "cli": CLI, "__main__": MAIN,  # the CLI starts the server; python -m pysynth runs the CLI
}
#: lines whose packages may not import a package of their own line
_SIBLINGS_APART = (METHODS, FACES)
#: private-looking platform modules meant to be shared, and the compiled core / twins
_SHARED_PRIVATE = {"_core", "_dispatch", "_validate", "_reference"}


def full_graph() -> Dict[str, Set[str]]:
    """:func:`graph` with the CLI modules included (the layer rules cover the faces too)."""
    known = _all_names()
    out = {}
    for pkg, base in TREES.items():
        for p in sorted(base.rglob("*.py")):
            parts = list(p.relative_to(base).with_suffix("").parts)
            name = ".".join([pkg] + (parts[:-1] if parts[-1] == "__init__" else parts))
            out[name] = _imports_all(name, p, known)
    return out


def _imports_all(name: str, path: Path, known: Set[str]) -> Set[str]:
    return {t for t, _ in _import_targets(name, path, known)}


def _import_targets(name: str, path: Path, known: Set[str]):
    """(resolved module, imported names) for each import statement of ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    is_pkg = path.name == "__init__.py"
    script = _script_nodes(tree)
    for node in ast.walk(tree):
        if id(node) in script:
            continue
        if isinstance(node, ast.Import):
            for a in node.names:
                r = _resolve(a.name, known)
                if r is not None and r != name:
                    yield r, ()
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            subs = [f"{mod}.{a.name}" for a in node.names if f"{mod}.{a.name}" in known]
            names = tuple(a.name for a in node.names if f"{mod}.{a.name}" not in known)
            for t in subs:
                if t != name:
                    yield t, ()
            r = _resolve(mod, known)
            if r is not None and r != name and (names or not subs):
                yield r, names


def _script_nodes(tree: ast.AST) -> Set[int]:
    """Nodes under ``if __name__ == "__main__":``: a ``python -m`` entry point is a face (it may
    call the CLI), never run on import."""
    out: Set[int] = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
                and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__"
                and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in node.test.comparators)):
            out.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return out


def layer_of(module: str) -> int:
    s = subpackage(module) if module != "pysynth.kernels" and not module.startswith("pysynth.kernels.") else "kernels"
    if s not in LAYERS:
        raise AssertionError(f"{module}: subpackage {s!r} is not placed in tests/test_imports.py LAYERS")
    return LAYERS[s]


def _package(module: str) -> str:
    return "kernels" if module.startswith("pysynth.kernels") else subpackage(module)


def test_every_package_has_a_layer():
    missing = sorted({_package(n) for n in _all_names()} - set(LAYERS))
    assert missing == [], f"place these in LAYERS (tests/test_imports.py): {missing}"


def test_layers_point_down():
    """0 upward imports: a module imports only from lines below its own (or its own line where allowed)."""
    bad = []
    for n, deps in full_graph().items():
        ln, pn = layer_of(n), _package(n)
        for d in deps:
            ld, pd = layer_of(d), _package(d)
            if pd == pn or pd == "pysynth" or (pn == "pysynth" and ld == PLATFORM):
                continue
            if ld > ln or (ld == ln and ln in _SIBLINGS_APART):
                bad.append(f"{n} -> {d}")
    assert sorted(bad) == [], "imports against the layering:\n" + "\n".join(sorted(bad))


def test_methods_are_siblings():
    """0 method -> method imports (a shared part moves down instead)."""
    methods = {p for p, ln in LAYERS.items() if ln == METHODS}
    bad = sorted(f"{n} -> {d}" for n, deps in full_graph().items() if _package(n) in methods
                 for d in deps if _package(d) in methods and _package(d) != _package(n))
    assert bad == [], bad


def test_stages_do_not_import_the_model_stack():
    stages = {p for p, ln in LAYERS.items() if ln == STAGES}
    stack = {p for p, ln in LAYERS.items() if ln == MODEL_STACK}
    bad = sorted(f"{n} -> {d}" for n, deps in full_graph().items() if _package(n) in stages
                 for d in deps if _package(d) in stack)
    assert bad == [], bad


def _private(part: str) -> bool:
    return part.startswith("_") and not part.startswith("__") and part not in _SHARED_PRIVATE


def test_no_private_names_across_packages():
    """0 imports of another package's ``_private`` module or name (``_core``, the twins, ``_dispatch``
    and ``_validate`` aside), including ``module._name`` attribute reads on an imported module."""
    known = _all_names()
    bad = []
    for pkg, base in TREES.items():
        for p in sorted(base.rglob("*.py")):
            parts = list(p.relative_to(base).with_suffix("").parts)
            name = ".".join([pkg] + (parts[:-1] if parts[-1] == "__init__" else parts))
            aliases = {}
            for target, names in _import_targets(name, p, known):
                if _package(target) == _package(name):
                    continue
                if any(_private(x) for x in target.split(".")[1:]):
                    bad.append(f"{name} imports module {target}")
                bad.extend(f"{name} imports {target}.{x}" for x in names if _private(x))
            tree = ast.parse(p.read_text(encoding="utf-8"))
            for node in ast.walk(tree):  # ``from pysynth.x import mod`` / ``import pysynth.x.mod as m``
                if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pysynth"):
                    for a in node.names:
                        full = f"{node.module}.{a.name}"
                        if full in known and _package(full) != _package(name):
                            aliases[a.asname or a.name] = full
                elif isinstance(node, ast.Import):
                    for a in node.names:
                        if a.asname and a.name in known and _package(a.name) != _package(name):
                            aliases[a.asname] = a.name
            for node in ast.walk(tree):
                if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                        and node.value.id in aliases and _private(node.attr)):
                    bad.append(f"{name} reads {aliases[node.value.id]}.{node.attr}")
    assert sorted(set(bad)) == [], "\n".join(sorted(set(bad)))


def test_rules_catch_violations(tmp_path):
    """The checks above see what they must: a sideways method import and a private name."""
    g = {"pysynth.qagen.x": {"pysynth.paraphrase.y"}, "pysynth.paraphrase.y": set()}
    assert layer_of("pysynth.qagen.x") == layer_of("pysynth.paraphrase.y") == METHODS
    assert _private("_onnxruntime") and not _private("_core") and not _private("__init__")
    assert find_cycle(g) is None


def test_no_function_over_150_lines():
    """Issue 25: long functions are split by job (the ``_reference.py`` twins, written as the
    readable spec, aside)."""
    long = []
    for p in sorted((ROOT / "pysynth").rglob("*.py")):
        if p.name == "_reference.py":
            continue
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 150:
                long.append(f"{p.relative_to(ROOT)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)")
    assert long == [], "\n".join(long)
