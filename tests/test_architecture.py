"""The layers of docs/architecture.md, checked on the source: every import statement of the
runtime and training packages, read with `ast` (imports inside functions included), must go in
the allowed direction.

* ``klent/protocols/`` reaches the engine only through its facade, ``klent.engine.player``, and the game
  contract, ``klent.engine.games`` (its modules included: a protocol may name `GoGame` or read SGF);
  ``klent.engine.files``, the atomic-write helper every writer must use, and ``klent.engine.settings``, the
  reader of settings files, are the utilities allowed beside them.  ``klent/matchplay/`` (klent as a
  client of engine programs) keeps to the same facade and may use the protocols' text formats.
* ``klent/server/`` may also import ``klent.engine.network``: its request batcher is itself an
  `klent.engine.network.Evaluator` that each request's `Player` evaluates through; and
  ``klent/protocols/``: its KataGo analysis endpoint answers a query by the code `klent analysis` does.
* ``klent/engine/``, ``klent/protocols/``, ``klent/matchplay/`` and ``klent/server/`` never import torch or
  ``klent.training``.
* The layers (the packages of ``klent``) import each other in one direction only, so there is no
  cycle, and nothing imports the command line (``klent/cli/``) but ``python -m klent``.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("engine", "protocols", "matchplay", "server", "training", "bench", "cli")  # the layers: klent.<name>

# What each layer may import of the others.  (`klent bench` also loads its benchmarks by name
# through importlib, which a reading of import statements does not see.)
ALLOWED_PACKAGES = {
    "engine": set(),
    "protocols": {"engine"},
    "matchplay": {"engine", "protocols"},
    "server": {"engine", "protocols"},
    "training": {"engine", "protocols", "matchplay"},
    "bench": {"engine", "protocols", "matchplay", "server", "training"},
    "cli": {"engine", "protocols", "matchplay", "server", "training", "bench"},
}

# The engine modules a layer above the facade may import: a module itself or any module under it.
FACADE = ("klent.engine.player", "klent.engine.games", "klent.engine.files", "klent.engine.settings")
ENGINE_ALLOWED = {
    "protocols": FACADE,
    "matchplay": FACADE,
    "server": (*FACADE, "klent.engine.network"),
}


@cache  # each file is parsed once for all the tests
def imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in ``path``; ``from a import b`` counts as
    ``a.b`` as well as ``a`` only when ``a.b`` is a module of the tree."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the importing module's package
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                if is_module(sub):
                    found.append((node.lineno, sub))
    return found


def is_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def sources(package: str) -> list[Path]:
    """The modules of one layer; ``klent/__main__.py`` (``python -m klent``) belongs to the command line."""
    found = sorted(p for p in (ROOT / "klent" / package).rglob("*.py") if "__pycache__" not in p.parts)
    return [*found, ROOT / "klent" / "__main__.py"] if package == "cli" else found


def layer(module: str) -> str | None:
    """The layer ``module`` belongs to, or None for a module outside klent's layers."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "klent" and parts[1] in PACKAGES else None


def within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes)


def where(path: Path, line: int, module: str) -> str:
    return f"{path.relative_to(ROOT)}:{line} imports {module}"


def test_every_package_is_read() -> None:
    for package in PACKAGES:
        assert sources(package), package
    assert any(module == "klent.engine.player" for _, module in imports(ROOT / "klent" / "protocols" / "lichess.py"))
    layered = {path for package in PACKAGES for path in sources(package)}
    every = {p for p in (ROOT / "klent").rglob("*.py") if "__pycache__" not in p.parts}
    assert every - layered == {ROOT / "klent" / "__init__.py"}, "a module outside every layer"


@pytest.mark.parametrize("package", sorted(ENGINE_ALLOWED))
def test_protocols_and_server_reach_the_engine_only_through_the_facade(package: str) -> None:
    allowed = ENGINE_ALLOWED[package]
    crossing = [
        where(path, line, module)
        for path in sources(package)
        for line, module in imports(path)
        if within(module, ("klent.engine",)) and module != "klent.engine" and not within(module, allowed)
    ]
    assert not crossing, f"{package}/ may import of the engine only {', '.join(allowed)}:\n" + "\n".join(crossing)


@pytest.mark.parametrize("package", ["engine", "protocols", "matchplay", "server"])
def test_the_runtime_never_imports_torch_or_training(package: str) -> None:
    found = [
        where(path, line, module)
        for path in sources(package)
        for line, module in imports(path)
        if within(module, ("torch", "klent.training"))
    ]
    assert not found, "\n".join(found)


def package_graph() -> dict[str, dict[str, list[str]]]:
    """For each layer, the others it imports, each with the places that do."""
    graph: dict[str, dict[str, list[str]]] = {package: {} for package in PACKAGES}
    for package in PACKAGES:
        for path in sources(package):
            for line, module in imports(path):
                top = layer(module)
                if top is not None and top != package:
                    graph[package].setdefault(top, []).append(where(path, line, module))
    return graph


def test_packages_import_each_other_in_one_direction() -> None:
    graph = package_graph()
    upward = [place for package, targets in graph.items() for target, places in targets.items()
              if target not in ALLOWED_PACKAGES[package] for place in places]
    assert not upward, "\n".join(upward)


def test_no_import_cycle_between_packages() -> None:
    graph = {package: set(targets) for package, targets in package_graph().items()}
    done: set[str] = set()

    def visit(package: str, path: tuple[str, ...]) -> None:
        if package in path:
            cycle = " -> ".join((*path[path.index(package):], package))
            pytest.fail(f"import cycle: {cycle}")
        if package in done:
            return
        for target in sorted(graph[package]):
            visit(target, (*path, package))
        done.add(package)

    for package in PACKAGES:
        visit(package, ())


def test_the_allowed_directions_have_no_cycle() -> None:
    """The rule itself: a layer never allows one that allows it back."""
    for package, allowed in ALLOWED_PACKAGES.items():
        for other in allowed:
            assert package not in ALLOWED_PACKAGES[other], (package, other)
