"""What a control is, and the one place control files are read and refused.

A control is a TOML file and a check file side by side in a directory (docs/controls.md):
the TOML names the rule (id, title, severity, description, references, scope, parameters)
and its check, a SPARQL ``SELECT`` (``check = "x.rq"``) whose rows are violations, or SHACL
shapes (``shapes = "x.ttl"``) whose validation results are. ``load_controls`` reads a
directory and refuses the whole set with one ``ControlError`` line at the first bad file
(a TOML or SPARQL syntax error, an undeclared prefix, an update, a bad severity or scope, a
missing check file, a parameter the query does not use) before anything is evaluated: each
SELECT is run once, with its parameters bound, on an empty in-memory store, so the engine
that evaluates it later is the one that accepted it.

A control's ``digest`` is the sha256 of its definition, the bytes an evaluation relied on:
``sha256(len(toml) as decimal ASCII + "\\n" + toml bytes + check bytes)``. Each recorded
evaluation keeps it, so a definition edited after it ran is visible.
"""

from __future__ import annotations

import functools
import hashlib
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from trails.errors import ControlError, TrailsError
from trails.store.terms import IRI, Term, literal

__all__ = [
    "SCOPES",
    "SEVERITIES",
    "Control",
    "builtin_controls",
    "builtin_dir",
    "load_control",
    "load_controls",
    "severity_rank",
]

SEVERITIES: tuple[str, ...] = ("info", "low", "medium", "high", "critical")
"""The severities, least to most severe."""
SCOPES: tuple[str, ...] = ("session", "store")

_ID = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_PARAM = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_RESERVED = frozenset({"session", "subject", "message"})
_KEYS = frozenset(
    {"id", "title", "severity", "description", "references", "scope", "check", "shapes", "params"}
)
#: the session IRI a check is tried with when it is loaded (no store holds it)
PROBE_SESSION = IRI.trusted("urn:trails:session:control-probe")


def severity_rank(severity: str) -> int:
    """0 for ``info`` up to 4 for ``critical``.

    Raises:
        ControlError: not a severity.
    """
    try:
        return SEVERITIES.index(severity)
    except ValueError:
        raise ControlError(
            f"unknown severity {severity!r} (one of {', '.join(SEVERITIES)})"
        ) from None


@dataclass(frozen=True)
class Control:
    """One control, as loaded and checked from its files."""

    id: str
    title: str
    severity: str
    scope: Literal["session", "store"]
    kind: Literal["sparql", "shacl"]
    check: str
    """The check's text: the SELECT query, or the shapes in Turtle."""
    digest: str
    """sha256 (hex) of the definition (module docstring)."""
    description: str = ""
    references: tuple[str, ...] = ()
    params: Mapping[str, Any] = field(default_factory=dict)
    path: Path | None = None
    """The TOML file it was read from."""
    check_file: str = ""

    def bindings(self, session: IRI | None) -> dict[str, Term]:
        """The terms bound into the query: each ``[params]`` value, and ``?session`` for a
        session-scoped control whose query names it."""
        bound: dict[str, Term] = {name: literal(value) for name, value in self.params.items()}
        if session is not None and re.search(r"[?$]session\b", self.check):
            bound["session"] = session
        return bound


def _fail(path: Path, why: str) -> ControlError:
    return ControlError(f"{path}: {why}")


def _text(path: Path, data: Mapping[str, Any], key: str, *, required: bool = True) -> str:
    value = data.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise _fail(path, f"{key} must be a non-empty string")
    return value


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise _fail(path, f"cannot be read ({exc.strerror or exc})") from None


def load_control(path: str | Path) -> Control:
    """Read and check one control's TOML file (its check file beside it).

    Raises:
        ControlError: the file or its check is refused (one line naming the file).
    """
    path = Path(path)
    raw = _read(path)
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise _fail(path, f"TOML syntax error: {exc}") from None
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise _fail(path, f"unknown key {unknown[0]!r} (known: {', '.join(sorted(_KEYS))})")
    cid = _text(path, data, "id")
    if not _ID.fullmatch(cid):
        raise _fail(path, f"id {cid!r} must be lower-case letters, digits and dashes")
    if cid != path.stem:
        raise _fail(path, f"id {cid!r} must equal the file name {path.stem!r}")
    title = _text(path, data, "title")
    severity = _text(path, data, "severity")
    if severity not in SEVERITIES:
        raise _fail(path, f"severity {severity!r} is not one of {', '.join(SEVERITIES)}")
    scope = _text(path, data, "scope")
    if scope not in SCOPES:
        raise _fail(path, f"scope {scope!r} is not one of {', '.join(SCOPES)}")
    description = _text(path, data, "description", required=False)
    references = data.get("references", [])
    if not isinstance(references, list) or not all(isinstance(r, str) for r in references):
        raise _fail(path, "references must be a list of strings")
    params = data.get("params", {})
    if not isinstance(params, dict):
        raise _fail(path, "[params] must be a table")
    for name, value in params.items():
        if not _PARAM.fullmatch(name) or name in _RESERVED:
            raise _fail(path, f"parameter name {name!r} is not allowed")
        if not isinstance(value, str | int | float | bool):
            raise _fail(path, f"parameter {name!r} must be a string, number or boolean")
    if ("check" in data) == ("shapes" in data):
        raise _fail(path, "give exactly one of check = 'x.rq' (SPARQL) or shapes = 'x.ttl'")
    kind: Literal["sparql", "shacl"] = "sparql" if "check" in data else "shacl"
    name = _text(path, data, "check" if kind == "sparql" else "shapes")
    check_path = path.parent / name
    if Path(name).name != name:
        raise _fail(path, f"check file {name!r} is a path, not a file name beside the TOML")
    if not check_path.is_file():
        raise _fail(path, f"check file {name!r} is missing (it must sit beside the TOML)")
    check_bytes = _read(check_path)
    try:
        check = check_bytes.decode("utf-8")
    except UnicodeDecodeError:
        raise _fail(check_path, "is not UTF-8 text") from None
    digest = hashlib.sha256(b"%d\n" % len(raw) + raw + check_bytes).hexdigest()
    control = Control(
        id=cid,
        title=title,
        severity=severity,
        scope=scope,  # type: ignore[arg-type]
        kind=kind,
        check=check,
        digest=digest,
        description=description,
        references=tuple(references),
        params=dict(params),
        path=path,
        check_file=name,
    )
    if kind == "sparql":
        _try_select(control, check_path)
    else:
        _try_shapes(control, check_path)
    return control


def _try_select(control: Control, path: Path) -> None:
    """Refuse a check that is not a SELECT this engine runs with its bindings."""
    from trails.store._sparql_bind import query_form
    from trails.store.base import select

    form = query_form(control.check)
    if form != "SELECT":
        what = f"a {form}" if form else "an update or not a query"
        raise _fail(path, f"is {what}; a control's check must be a SPARQL SELECT")
    session = PROBE_SESSION if control.scope == "session" else None
    try:
        select(
            _probe_store(),
            control.check,
            control.bindings(session),
            union_default_graph=True,
        )
    except TrailsError as exc:
        line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise _fail(path, line) from None


@functools.lru_cache(maxsize=1)
def _probe_store() -> Any:
    from trails.store import open_store

    return open_store("memory:")


_SH = "http://www.w3.org/ns/shacl#"
_TARGETS = {
    _SH + t for t in ("targetClass", "targetNode", "targetSubjectsOf", "targetObjectsOf", "target")
}


def _try_shapes(control: Control, path: Path) -> None:
    """Refuse shapes that do not parse as Turtle (an undeclared prefix is a syntax error),
    and shapes that target nothing: they validate nothing, so every session would pass
    without having been checked."""
    import rdflib

    graph = rdflib.Graph()
    try:
        graph.parse(data=control.check, format="turtle")
    except Exception as exc:  # rdflib raises several kinds for bad Turtle
        said = " ".join(str(exc).split())[:300] or type(exc).__name__
        raise _fail(path, f"Turtle syntax error: {said}") from None
    shape_classes = {rdflib.URIRef(_SH + "NodeShape"), rdflib.URIRef(_SH + "PropertyShape")}
    implicit = any(
        (s, rdflib.RDF.type, rdflib.RDFS.Class) in graph
        for s, _, o in graph.triples((None, rdflib.RDF.type, None))
        if o in shape_classes
    )
    if not implicit and not any(str(p) in _TARGETS for p in graph.predicates()):
        raise _fail(path, "declares no shape with a target (sh:targetClass, sh:targetNode ...)")


def load_controls(directory: str | Path) -> list[Control]:
    """Every control of ``directory`` (its ``*.toml`` files), checked, sorted by id.

    Raises:
        ControlError: the directory is missing, or a file is refused (one line), or two
            files give the same id.
    """
    folder = Path(directory)
    if not folder.is_dir():
        raise ControlError(f"{folder}: no such controls directory")
    controls = [load_control(p) for p in sorted(folder.glob("*.toml"))]
    return sorted(controls, key=lambda c: c.id)


def builtin_dir() -> Path | None:
    """The folder of the built-in controls (shipped with the package), if installed."""
    here = Path(__file__).resolve()
    for candidate in (here.parent.parent / "_data" / "controls", here.parents[3] / "controls"):
        if candidate.is_dir():
            return candidate
    return None


def builtin_controls() -> list[Control]:
    """The built-in set: the controls shipped in the top-level ``controls/`` folder."""
    folder = builtin_dir()
    return load_controls(folder) if folder is not None else []
