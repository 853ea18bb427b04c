"""The house keeps its shape: rooms on floors, imports only downwards, no circles anywhere.

``docs/architecture.md`` draws the floors as a text diagram and says, for each room, which
rooms it imports and which import it. These tests read that page and hold it against the
imports of ``src/trails`` (every ``import`` and ``from ... import``: at module level, inside
functions and under ``TYPE_CHECKING``, relative ones resolved), so the map stays true:

- every room (a folder or top-level module of ``src/trails``) stands on exactly one floor;
- a room imports only rooms on lower floors: nothing runs back up a floor or sideways;
- no module circles through others, inside a room or across rooms;
- each room's "Imports" and "Imported by" lines name exactly the rooms the code shows.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "trails"
DOC = ROOT / "docs" / "architecture.md"
PACKAGE = "trails"
SURFACE = "trails"
"""The package's own ``__init__`` (``import trails``) counts as a room of that name."""


@dataclass
class Module:
    name: str
    path: Path
    is_package: bool
    imports: dict[str, list[int]] = field(default_factory=dict)
    """Module name imported -> the lines that import it."""

    @property
    def room(self) -> str:
        return room_of(self.name)


def room_of(module: str) -> str:
    parts = module.split(".")
    return SURFACE if len(parts) == 1 else parts[1]


def modules(src: Path = SRC) -> dict[str, Module]:
    """Every module of the package under ``src``, with the package's modules it imports."""
    found: dict[str, Module] = {}
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src.parent).with_suffix("")
        parts = list(rel.parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        name = ".".join(parts)
        found[name] = Module(name, path, is_package)
    for module in found.values():
        tree = ast.parse(module.path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            for target in _targets(module, node, found):
                module.imports.setdefault(target, []).append(getattr(node, "lineno", 0))
    return found


def _targets(module: Module, node: ast.AST, known: dict[str, Module]) -> Iterator[str]:
    """The modules of the package an import statement loads (by their full names)."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name.split(".")[0] == PACKAGE:
                yield _known(alias.name, known)
        return
    if not isinstance(node, ast.ImportFrom):
        return
    if node.level:
        base = module.name.split(".")
        if not module.is_package:
            base = base[:-1]
        base = base[: len(base) - (node.level - 1)]
        source = ".".join([*base, *([node.module] if node.module else [])])
    else:
        source = node.module or ""
    if source.split(".")[0] != PACKAGE:
        return
    for alias in node.names:
        sub = f"{source}.{alias.name}"
        yield sub if sub in known else _known(source, known)


def _known(name: str, known: dict[str, Module]) -> str:
    """The longest prefix of ``name`` that is a module of the package."""
    parts = name.split(".")
    while parts and ".".join(parts) not in known:
        parts.pop()
    return ".".join(parts)


def floors_from_doc() -> dict[str, int]:
    """The floor diagram of docs/architecture.md: ``floor N  room · room``, top floor first."""
    text = DOC.read_text(encoding="utf-8")
    block = text.split("<!-- floors -->", 2)[1]
    floors: dict[str, int] = {}
    for line in block.splitlines():
        m = re.match(r"\s*floor\s+(\d+)\s+(.+)$", line)
        if not m:
            continue
        for room in re.split(r"\s+·\s+", m.group(2).strip()):
            assert room not in floors, f"{room} stands on two floors of the diagram"
            floors[room] = int(m.group(1))
    return floors


def room_lines_from_doc() -> dict[str, dict[str, set[str]]]:
    """Each room section's ``Imports:`` and ``Imported by:`` lines."""
    text = DOC.read_text(encoding="utf-8")
    rooms: dict[str, dict[str, set[str]]] = {}
    for section in re.split(r"^### ", text, flags=re.M)[1:]:
        name = section.split("\n", 1)[0].strip().strip("`").rstrip("/").removesuffix(".py")
        lines: dict[str, set[str]] = {}
        for key in ("Imports", "Imported by"):
            m = re.search(rf"^{key}: (.*)$", section, flags=re.M)
            assert m, f"the section of {name} has no '{key}:' line"
            value = m.group(1).strip().rstrip(".")
            lines[key] = (
                set()
                if value == "nothing"
                else {
                    r.strip().strip("`").rstrip("/").removesuffix(".py") for r in value.split(",")
                }
            )
        rooms[name] = lines
    return rooms


def room_edges(found: dict[str, Module]) -> dict[str, dict[str, set[str]]]:
    """room -> room it imports -> "file:line" of each such import."""
    edges: dict[str, dict[str, set[str]]] = {}
    for module in found.values():
        for target, lines in module.imports.items():
            if room_of(target) != module.room:
                where = {f"{module.name}:{n}" for n in lines}
                edges.setdefault(module.room, {}).setdefault(room_of(target), set()).update(where)
    return edges


def cycles(found: dict[str, Module]) -> list[list[str]]:
    """The module circles: strongly connected components of more than one module."""
    graph = {name: set(m.imports) - {name} for name, m in found.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


@pytest.fixture(scope="module")
def found() -> dict[str, Module]:
    return modules()


def test_every_room_stands_on_one_floor(found: dict[str, Module]) -> None:
    floors = floors_from_doc()
    rooms = {m.room for m in found.values()}
    assert rooms - floors.keys() == set(), "rooms missing from the diagram"
    assert floors.keys() - rooms == set(), "rooms in the diagram that the code does not have"


def test_imports_only_run_down(found: dict[str, Module]) -> None:
    floors = floors_from_doc()
    upward = [
        f"{a} (floor {floors[a]}) -> {b} (floor {floors[b]}) at {', '.join(sorted(where)[:3])}"
        for a, outs in room_edges(found).items()
        for b, where in outs.items()
        if floors[b] >= floors[a]
    ]
    assert not upward, "imports that run up a floor or sideways:\n" + "\n".join(upward)


def test_no_module_circles(found: dict[str, Module]) -> None:
    assert cycles(found) == []


def test_the_map_names_what_each_room_imports(found: dict[str, Module]) -> None:
    edges = room_edges(found)
    documented = room_lines_from_doc()
    rooms = {m.room for m in found.values()}
    assert documented.keys() == rooms, "each room has one section (### name) in the map"
    wrong = []
    for room in sorted(rooms):
        imports = set(edges.get(room, {}))
        imported_by = {a for a, outs in edges.items() if room in outs}
        if documented[room]["Imports"] != imports:
            wrong.append(
                f"{room} imports {sorted(imports)}, the map says {sorted(documented[room]['Imports'])}"
            )
        if documented[room]["Imported by"] != imported_by:
            wrong.append(
                f"{room} is imported by {sorted(imported_by)}, "
                f"the map says {sorted(documented[room]['Imported by'])}"
            )
    assert not wrong, "\n".join(wrong)


def test_the_checks_catch_what_they_are_for(tmp_path: Path) -> None:
    """The analysis finds an upward import, a circle and a relative import (so it can fail)."""
    pkg = tmp_path / "trails"
    (pkg / "low").mkdir(parents=True)
    (pkg / "high").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "low" / "__init__.py").write_text("")
    (pkg / "low" / "a.py").write_text("def f():\n    from trails.high import b\n")
    (pkg / "high" / "__init__.py").write_text("from . import b\n")
    (pkg / "high" / "b.py").write_text("from trails.low.a import f\n")
    found = modules(pkg)
    assert found["trails.high"].imports.keys() == {"trails.high.b"}
    edges = room_edges(found)
    assert {a: set(outs) for a, outs in edges.items()} == {"low": {"high"}, "high": {"low"}}
    assert edges["low"]["high"] == {"trails.low.a:2"}
    assert cycles(found) == [["trails.high.b", "trails.low.a"]]


#: the console's room inside ``server``, and the modules of it the endpoint may reach
CONSOLE = f"{PACKAGE}.server.console"
CONSOLE_DOORS = {f"{CONSOLE}.routes", f"{CONSOLE}.store"}


def test_the_console_is_a_room_of_its_own(found: dict[str, Module]) -> None:
    """The console's modules, templates and stylesheet live in ``server/console/`` together,
    and the endpoint reaches it only through its doors: ``routes`` (which mounts it) and
    ``store`` (the read-only view under a grant)."""
    server = SRC / "server"
    beside = sorted(
        p.name for p in server.iterdir() if p.name.startswith("console") and p.is_file()
    )
    assert beside == [], f"console files beside the endpoint: {beside}"
    assert not (server / "templates").exists() and not (server / "static").exists()
    room = server / "console"
    static = sorted(p.name for p in (room / "static").iterdir())
    # the stylesheet, the scripts and the vendored layout engine with its licences
    assert {"console.css", "console.js", "dagre.min.js"} <= set(static)
    assert all(name.endswith((".css", ".js", ".txt")) for name in static), static
    assert (room / "templates" / "base.html.j2").is_file()
    reached = {
        f"{module.name} -> {target}"
        for module in found.values()
        if module.name.startswith(f"{PACKAGE}.server.") and not module.name.startswith(CONSOLE)
        for target in module.imports
        if target.startswith(CONSOLE) and target not in CONSOLE_DOORS
    }
    assert reached == set(), "the endpoint reaches into the console past its doors"
