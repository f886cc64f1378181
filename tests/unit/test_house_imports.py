"""The modules of ``src/ostinato`` share public names only, and none imports itself through others; nor do
the scripts of ``bench/`` (each group's folder, ``bench/common/`` and ``bench/face/swh_compat/``) and ``scripts/``,
with the package ``test_servers``.

- **Private names.** No module imports another module's private name (one that starts with ``_``, not a
  dunder): neither ``from .schedules import _get`` (multi-line imports included) nor ``from . import
  codec`` then ``codec._child``. A name two modules need is public, or lives where it belongs.
- **Cycles.** The imports among the modules of ``src/ostinato`` make no cycle. Every ``import`` and
  ``from … import`` counts, wherever it stands: at a module's top, in a function, or under ``if
  TYPE_CHECKING``: a cycle is broken by moving what both modules need, not by importing it later.
  An import's edge goes to the module it names (``from .a import b``: to ``a.b`` when that is a
  module, else to ``a``); the packages Python imports on the way (``a``'s ``__init__``) are not edges,
  so a package whose ``__init__`` re-exports its modules makes no cycle with them.
- **Scripts.** Both rules hold among the scripts of ``bench/``'s folders and ``scripts/`` and the
  modules of ``test_servers``, each import resolved as when the script runs (its own folder first on
  ``sys.path``, then the repository's root, which each benchmark puts there): a bare name is the file
  beside the script (``swh_compat`` from ``bench/face/`` is ``bench/face/swh_compat.py``, not the folder
  beside it, which has no ``__init__``); ``bench.face.vs_swh_rpc`` is ``bench/face/vs_swh_rpc.py``, the
  way every benchmark imports another; ``test_servers.x`` is that package's module. ``src/ostinato``
  imports none of them, so no cycle passes through it, and its modules are left out of this graph:
  their own check is the one above.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import ostinato

ROOT = Path(ostinato.__file__).parent
REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True, slots=True)
class Import:
    """One module's import of another: where it stands, and the private name it reads, if any."""

    source: str
    line: int
    target: str
    private: str | None = None

    def __str__(self) -> str:
        return f"{self.source}:{self.line} → {self.target}" + (f" ({self.private})" if self.private else "")


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def module_names(root: Path) -> dict[str, Path]:
    """Each module's dotted name (a package by its own name, not ``….__init__``) to its file."""
    package = root.name
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> Iterator[Import]:
    """The imports of module ``name`` of ``modules``' own modules: every one, wherever it stands."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    own = package.split(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    bound: dict[str, str] = {}  # a local name to the module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            if origin.split(".")[0] != own:
                continue
            for alias in node.names:
                submodule = f"{origin}.{alias.name}"
                if submodule in modules:
                    bound[alias.asname or alias.name] = submodule
                    yield Import(name, node.lineno, submodule, alias.name if _is_private(alias.name) else None)
                elif origin in modules:
                    yield Import(name, node.lineno, origin, alias.name if _is_private(alias.name) else None)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] != own:
                    continue
                if alias.name in modules:
                    yield Import(name, node.lineno, alias.name)
                bound[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else own
    yield from private_reads(name, tree, bound, modules)


def private_reads(name: str, tree: ast.AST, bound: dict[str, str], modules: dict[str, Path]) -> Iterator[Import]:
    """``module._name``, of a module ``bound`` to a local name by an import."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            chain, value = [], node.value
            while isinstance(value, ast.Attribute):
                chain.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in bound:
                target = ".".join([bound[value.id], *reversed(chain)])
                if target in modules and target != name:
                    yield Import(name, node.lineno, target, node.attr)


@functools.cache
def house(root: Path = ROOT) -> tuple[Import, ...]:
    modules = module_names(root)
    return tuple(found for name, path in modules.items() for found in imports_of(name, path, modules))


#: the folders of scripts, from the repository's root: each runs with its own folder first on ``sys.path``
#: (``python bench/face/x.py``, or pytest's rootdir for ``bench/face/swh_compat``), so a bare name is a sibling file
SCRIPT_FOLDERS = tuple(sorted(folder.relative_to(REPO).as_posix() for folder in (REPO / "bench").rglob("*")
                              if folder.is_dir() and folder.name not in ("results", "__pycache__") and any(folder.glob("*.py"))
                              )) + ("scripts",)
#: the packages at the repository's root that those scripts import (with the root put on ``sys.path``)
PACKAGES = ("test_servers",)


def script_modules(repo: Path, folders: tuple[str, ...] = SCRIPT_FOLDERS,
                   packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    """Each script by its folder and name (``bench/vs_swh``), and each module of ``packages`` by its dotted name."""
    found = {f"{folder}/{path.stem}": path for folder in folders for path in sorted((repo / folder).glob("*.py"))}
    for package in packages:
        found.update(module_names(repo / package))
    return found


def script_imports_of(name: str, path: Path, modules: dict[str, Path]) -> Iterator[Import]:
    """The imports of script ``name`` of ``modules``' own modules, as Python resolves them when the script
    runs: a bare name is a file beside it (``bench/x.py`` before a folder ``bench/x/`` with no
    ``__init__``, as Python's own finder does); else, from the repository's root, a module of a package
    (``test_servers.postgres``) or a script of a folder, a namespace package there (``bench.x``)."""
    folder = name.rpartition("/")[0]

    def resolve(dotted: str) -> str | None:
        sibling = f"{folder}/{dotted.split('.')[0]}"
        if sibling in modules:
            return sibling
        parts = dotted.split(".")
        for end in range(len(parts), 0, -1):  # the deepest module the name reaches
            for reached in (".".join(parts[:end]), "/".join(parts[:end])):
                if reached in modules:
                    return reached
        return None

    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    bound: dict[str, str] = {}  # a local name to the module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and (origin := resolve(node.module or "")):
            for alias in node.names:
                submodule = resolve(f"{node.module}.{alias.name}")
                if submodule is not None and submodule != origin:
                    bound[alias.asname or alias.name] = submodule
                    yield Import(name, node.lineno, submodule, alias.name if _is_private(alias.name) else None)
                else:
                    yield Import(name, node.lineno, origin, alias.name if _is_private(alias.name) else None)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if (target := resolve(alias.name)) is None:
                    continue
                yield Import(name, node.lineno, target)
                top = resolve(alias.name.split(".")[0])
                bound[alias.asname or alias.name.split(".")[0]] = target if alias.asname else top or target
    yield from private_reads(name, tree, bound, modules)


@functools.cache
def scripts(repo: Path = REPO, folders: tuple[str, ...] = SCRIPT_FOLDERS,
            packages: tuple[str, ...] = PACKAGES) -> tuple[Import, ...]:
    """The imports among the scripts of ``folders`` and the modules of ``packages``."""
    modules = script_modules(repo, folders, packages)
    return tuple(found for name, path in modules.items()
                 for found in (script_imports_of(name, path, modules) if "/" in name else imports_of(name, path, modules)))


def private_imports(imports: tuple[Import, ...]) -> list[Import]:
    return [found for found in imports if found.private and found.target != found.source]


def cycles(imports: tuple[Import, ...]) -> list[list[Import]]:
    """One cycle of each group of modules that import each other (Tarjan's strongly connected
    components, then a shortest way back to the component's first module), as the imports that make it."""
    edges: dict[str, dict[str, Import]] = {}
    for found in imports:
        edges.setdefault(found.source, {}).setdefault(found.target, found)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[list[str]] = []

    def connect(start: str) -> None:  # iterative, so that a long chain of imports needs no deep recursion
        work = [(start, iter(sorted(edges.get(start, {}))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    work.append((target, iter(sorted(edges.get(target, {})))))
                elif target in stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in edges.get(node, {}):
                    components.append(sorted(component))

    for module in sorted(edges):
        if module not in index:
            connect(module)
    found = []
    for component in components:
        members, first = set(component), component[0]
        previous: dict[str, str] = {}
        frontier = [first]
        while first not in previous:  # breadth first, within the component, back to its first module
            following = []
            for node in frontier:
                for target in sorted(edges.get(node, {})):
                    if target in members and target not in previous:
                        previous[target] = node
                        following.append(target)
            frontier = following
        path, node = [], first
        while True:
            path.append(edges[previous[node]][node])
            node = previous[node]
            if node == first:
                break
        found.append(path[::-1])
    return found


def test_no_module_imports_another_modules_private_name():
    found = private_imports(house())
    assert not found, "private names imported across modules:\n" + "\n".join(map(str, found))


def test_no_script_imports_another_modules_private_name():
    found = private_imports(scripts())
    assert not found, "private names imported across scripts:\n" + "\n".join(map(str, found))


def test_no_import_cycle_among_the_modules():
    found = cycles(house())
    assert not found, "import cycles:\n" + "\n".join(" ; ".join(map(str, cycle)) for cycle in found)


def test_no_import_cycle_among_the_scripts():
    outside = {"bench", "scripts", *PACKAGES}
    into = [f"{name}:{node.lineno}" for name, path in module_names(ROOT).items()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Import) and any(alias.name.split(".")[0] in outside for alias in node.names)
            or isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] in outside]
    assert not into, "src/ostinato imports the scripts' modules, which these cycles leave out: " + ", ".join(into)
    found = cycles(scripts())
    assert not found, "import cycles:\n" + "\n".join(" ; ".join(map(str, cycle)) for cycle in found)


def test_the_checks_see_every_kind_of_import(tmp_path):
    """The checks themselves, on a package of their own: a private name imported on several lines, read
    as a module's attribute (``c._hidden``, ``pkg.e._mine``), and cycles made by a function's import and by one for type checking only."""
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "from .a import A\n",  # a package re-exporting its module: no cycle
        "a.py": "from .b import (\n    B,\n    _hidden,\n)\nA = 1\n",
        "b.py": "from typing import TYPE_CHECKING\nB = 1\n_hidden = 2\nif TYPE_CHECKING:\n    from .c import C\n",
        "c.py": "from . import b\nC = b._hidden\ndef late():\n    from .sub import d\n",
        "sub/__init__.py": "",
        "sub/d.py": "import pkg.c as c\nimport pkg.e\nD = pkg.e._mine\n",
        "e.py": "def own():\n    return _mine\n_mine = 1\nimport os\nos._exit\n",
    }
    for name, text in files.items():
        (root / name).write_text(text)
    imports = house(root)
    assert sorted(map(str, private_imports(imports))) == ["pkg.a:1 → pkg.b (_hidden)", "pkg.c:2 → pkg.b (_hidden)",
                                                          "pkg.sub.d:3 → pkg.e (_mine)"]
    [cycle] = cycles(imports)
    assert [str(step) for step in cycle] == ["pkg.b:5 → pkg.c", "pkg.c:1 → pkg.b"]
    (root / "b.py").write_text("B = 1\n_hidden = 2\n")  # the cycle left: c → sub.d → c, through a function's import
    house.cache_clear()
    [cycle] = cycles(house(root))
    assert [str(step) for step in cycle] == ["pkg.c:4 → pkg.sub.d", "pkg.sub.d:1 → pkg.c"]


def test_the_checks_resolve_a_scripts_imports_as_it_runs(tmp_path):
    """A bare name is a file beside the script (not a folder of that name, nor a file of another folder),
    ``bench.c`` is bench/c.py through the repository's root, and a package's modules are by their dotted names."""
    files = {
        "bench/a.py": "import json\nfrom b import B\nA = 1\n",
        "bench/b.py": "B = 1\ndef late():\n    import c\n",
        "bench/c.py": "import pkg.m\nfrom bench.a import A\n",
        "bench/d.py": "from x import _private\n",  # x.py, beside the folder x/
        "bench/x.py": "_private = 1\n",
        "bench/x/y.py": "import d\n",  # bench/x/'s own d: there is none
        "scripts/s.py": "import a\nimport pkg\npkg.m._hidden\n",
        "pkg/__init__.py": "",
        "pkg/m.py": "from . import n\n_hidden = 1\n",
        "pkg/n.py": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    imports = scripts(tmp_path, ("bench", "bench/x", "scripts"), ("pkg",))
    assert sorted({f"{found.source} → {found.target}" for found in imports}) == [
        "bench/a → bench/b", "bench/b → bench/c", "bench/c → bench/a", "bench/c → pkg.m", "bench/d → bench/x",
        "pkg.m → pkg.n", "scripts/s → pkg", "scripts/s → pkg.m"]
    assert sorted(map(str, private_imports(imports))) == ["bench/d:1 → bench/x (_private)",
                                                          "scripts/s:3 → pkg.m (_hidden)"]
    [cycle] = cycles(imports)
    assert [str(step) for step in cycle] == ["bench/a:2 → bench/b", "bench/b:3 → bench/c", "bench/c:2 → bench/a"]
