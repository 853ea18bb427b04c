"""The capability registry: ``@capability`` and the manifest of each capability.

A capability is a plain function whose first parameter may be ``ctx``. The
decorator reads its signature once, builds a pydantic model of its arguments
(so ``invoke`` validates in one call) and a JSON schema of input and output,
and registers it in insertion order. Registering an id again replaces the old
entry and moves it to the end ("most recently registered").
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, get_type_hints

import pydantic
from pydantic import BaseModel, ConfigDict, TypeAdapter, create_model

from trails.errors import UnknownCapability, UserError, ValidationError
from trails.text import check_text

__all__ = [
    "CapabilitySpec",
    "ParamSpec",
    "all_capabilities",
    "capability",
    "get_capability",
    "precondition_text",
    "register_spec",
    "unmet_precondition",
    "unregister",
]

F = TypeVar("F", bound=Callable[..., Any])

Precondition = str | Callable[[], Any]
"""A condition a capability needs: words for people and planners, or a zero-argument
callable checked before each call (a falsy result or an exception: not met)."""

_handlers: dict[str, CapabilitySpec] = {}
_lock = threading.Lock()


@functools.lru_cache(maxsize=1024)
def _input_schema_text(model: type[pydantic.BaseModel]) -> str:
    return json.dumps(model.model_json_schema())


def _input_schema(model: type[pydantic.BaseModel]) -> dict[str, Any]:
    """The input model's JSON schema, built once per model (a planner asks every run)."""
    schema: dict[str, Any] = json.loads(_input_schema_text(model))
    return schema


_output_schemas: dict[int, tuple[Any, str]] = {}


def _output_schema(adapter: Any) -> dict[str, Any]:
    """The output adapter's JSON schema, built once per adapter."""
    cached = _output_schemas.get(id(adapter))
    if cached is None or cached[0] is not adapter:
        cached = _output_schemas[id(adapter)] = (adapter, json.dumps(adapter.json_schema()))
    schema: dict[str, Any] = json.loads(cached[1])
    return schema


@dataclass(frozen=True)
class ParamSpec:
    name: str
    annotation: str
    required: bool
    default: Any = None


@dataclass(frozen=True)
class CapabilitySpec:
    """A registered capability and everything known about it."""

    id: str
    description: str
    handler: Callable[..., Any]
    takes_ctx: bool
    params: tuple[ParamSpec, ...]
    input_model: type[BaseModel]
    output_adapter: TypeAdapter[Any] | None
    cost_estimate: Mapping[str, float] | None = None
    side_effects: bool = False
    terminal: bool = False
    annotations: Mapping[str, Any] = field(default_factory=dict)
    timeout_s: float | None = None
    parallel_safe: bool = True
    preconditions: tuple[Precondition, ...] = ()
    high_risk: bool = False
    screen_output: bool = False
    granted_to: tuple[str, ...] = ()

    @property
    def is_async(self) -> bool:
        """The handler is an ``async def``: ``invoke`` runs it to completion, ``ainvoke`` awaits it."""
        return inspect.iscoroutinefunction(self.handler)

    def validate(self, args: Mapping[str, Any] | None) -> dict[str, Any]:
        """Validate and coerce ``args``; the keyword arguments for the handler.

        Raises:
            ValidationError: unknown, missing or ill-typed arguments.
        """
        if args is None:
            args = {}
        if not isinstance(args, Mapping):
            raise ValidationError(
                self.id, f"arguments must be a mapping, not {type(args).__name__}"
            )
        try:
            model = self.input_model.model_validate(args)
        except pydantic.ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or '(args)'}: {err['msg']}"
                for err in exc.errors()
            )
            raise ValidationError(self.id, problems) from exc
        return {name: getattr(model, name) for name in self.input_model.model_fields}

    def manifest(self) -> dict[str, Any]:
        """The capability's manifest: description, params, input and output JSON schema."""
        output_schema = _output_schema(self.output_adapter) if self.output_adapter else {}
        return {
            "id": self.id,
            "description": self.description,
            "params": [
                {"name": p.name, "type": p.annotation, "required": p.required}
                | ({} if p.required else {"default": p.default})
                for p in self.params
            ],
            "input_schema": _input_schema(self.input_model),
            "output_schema": output_schema,
            "cost_estimate": dict(self.cost_estimate or {}),
            "side_effects": self.side_effects,
            "terminal": self.terminal,
            "annotations": dict(self.annotations),
            "timeout_s": self.timeout_s,
            "parallel_safe": self.parallel_safe,
            "preconditions": [precondition_text(p) for p in self.preconditions],
        }

    def metadata(self) -> dict[str, Any]:
        """The per-tool metadata dict planners filter on (seed: ``tool_filter``)."""
        manifest = self.manifest()
        return {
            "id": self.id,
            "description": self.description,
            "params": [p.name for p in self.params],
            "required": [p.name for p in self.params if p.required],
            "types": {p.name: p.annotation for p in self.params},
            "annotations": dict(self.annotations),
            "input_shape": manifest["input_schema"],
            "output_shape": manifest["output_schema"],
            "cost_estimate": manifest["cost_estimate"],
            "side_effects": self.side_effects,
            "terminal": self.terminal,
            "parallel_safe": self.parallel_safe,
            "preconditions": manifest["preconditions"],
        }


def precondition_text(condition: Precondition) -> str:
    """How a precondition reads: its words, or a callable's docstring (first line) or name."""
    if isinstance(condition, str):
        return condition
    doc = (inspect.getdoc(condition) or "").strip()
    return doc.split("\n")[0] if doc else getattr(condition, "__name__", repr(condition))


def unmet_precondition(spec: CapabilitySpec) -> str | None:
    """The first callable precondition of ``spec`` that does not hold now (its text, and
    the exception when it raised); None when every one holds."""
    for condition in spec.preconditions:
        if isinstance(condition, str):
            continue
        try:
            held = condition()
        except Exception as exc:  # a check that cannot run does not hold
            return f"{precondition_text(condition)} ({type(exc).__name__}: {exc})"
        if not held:
            return precondition_text(condition)
    return None


def _preconditions(capability_id: str, value: Any) -> tuple[Precondition, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or callable(value) or not isinstance(value, list | tuple):
        raise UserError(
            f"capability {capability_id!r}: preconditions must be a list of strings "
            f"or zero-argument callables, not {type(value).__name__}"
        )
    for item in value:
        if isinstance(item, str):
            check_text(item, f"capability {capability_id!r} precondition")
            if not item.strip():
                raise UserError(f"capability {capability_id!r}: a precondition is empty")
        elif not callable(item):
            raise UserError(
                f"capability {capability_id!r}: a precondition must be a string or a "
                f"callable, not {item!r}"
            )
    return tuple(value)


def _cost_estimate(capability_id: str, value: Any) -> dict[str, float] | None:
    """``cost_estimate`` as a mapping of names to numbers (a number alone: US dollars).

    Raises:
        UserError: not a number or a mapping, a name that is not a non-empty string, or
            a value that is not a finite number at least 0.
    """
    where = f"capability {capability_id!r}: cost_estimate"
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        if not math.isfinite(value) or value < 0:
            raise UserError(
                f"{where} must be a finite number at least 0 (US dollars), not {value!r}"
            )
        return {"usd": float(value)}
    if not isinstance(value, Mapping):
        raise UserError(
            f"{where} must be a number of US dollars or a mapping such as "
            f'{{"usd": 0.02, "tokens": 1500}}, not {type(value).__name__} {value!r:.40}'
        )
    out: dict[str, float] = {}
    for name, amount in value.items():
        if not isinstance(name, str) or not name.strip():
            raise UserError(f"{where}: names must be non-empty strings, not {name!r:.40}")
        check_text(name, f"{where} name")
        if (
            isinstance(amount, bool)
            or not isinstance(amount, int | float)
            or not math.isfinite(amount)
            or amount < 0
        ):
            raise UserError(
                f"{where}: {name!r} must be a finite number at least 0, not {amount!r:.40}"
            )
        out[name] = amount
    return out


def _type_name(annotation: Any) -> str:
    if annotation is inspect.Parameter.empty:
        return "Any"
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def _build_spec(
    fn: Callable[..., Any],
    *,
    id: str,
    description: str,
    cost_estimate: Mapping[str, float] | None,
    side_effects: bool,
    terminal: bool,
    annotations: Mapping[str, Any] | None,
    timeout_s: float | None = None,
    parallel_safe: bool = True,
    preconditions: tuple[Precondition, ...] = (),
    marks: Mapping[str, Any] | None = None,
) -> CapabilitySpec:
    signature = inspect.signature(fn)
    try:
        hints = get_type_hints(fn)
    except Exception:  # unresolved forward references: fall back to raw annotations
        hints = {}
    parameters = list(signature.parameters.values())
    takes_ctx = bool(parameters) and parameters[0].name == "ctx"
    if takes_ctx:
        parameters = parameters[1:]
    fields: dict[str, Any] = {}
    params: list[ParamSpec] = []
    for p in parameters:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise UserError(f"capability {id!r}: *args / **kwargs are not supported ({p.name})")
        annotation = hints.get(p.name, p.annotation)
        typ = Any if annotation is inspect.Parameter.empty else annotation
        required = p.default is inspect.Parameter.empty
        fields[p.name] = (typ, ... if required else p.default)
        params.append(
            ParamSpec(p.name, _type_name(annotation), required, None if required else p.default)
        )
    model_name = "".join(part.capitalize() for part in id.replace("-", ".").split(".")) + "Input"
    input_model = create_model(  # type: ignore[call-overload]
        model_name,
        __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=True),
        **fields,
    )
    returns = hints.get("return", signature.return_annotation)
    if inspect.isgeneratorfunction(fn):  # a streaming handler: its result is the chunks joined
        returns = str
    output_adapter: TypeAdapter[Any] | None = None
    if returns not in (inspect.Signature.empty, None, type(None)):
        try:
            output_adapter = TypeAdapter(returns)
        except pydantic.PydanticSchemaGenerationError:
            output_adapter = None
    return CapabilitySpec(
        id=id,
        description=description or (inspect.getdoc(fn) or "").split("\n")[0],
        handler=fn,
        takes_ctx=takes_ctx,
        params=tuple(params),
        input_model=input_model,
        output_adapter=output_adapter,
        cost_estimate=cost_estimate,
        side_effects=side_effects,
        terminal=terminal,
        annotations=dict(annotations or {}),
        timeout_s=timeout_s,
        parallel_safe=parallel_safe,
        preconditions=preconditions,
        **dict(marks or {}),
    )


def capability(
    *,
    id: str,
    description: str = "",
    cost_estimate: Mapping[str, float] | float | None = None,
    side_effects: bool = False,
    terminal: bool = False,
    annotations: Mapping[str, Any] | None = None,
    timeout_s: float | None = None,
    parallel_safe: bool = True,
    preconditions: list[Precondition] | tuple[Precondition, ...] | None = None,
    high_risk: bool = False,
    screen_output: bool = False,
    granted_to: Sequence[str] | None = None,
) -> Callable[[F], F]:
    """Register a function as a capability that ``invoke`` can dispatch to.

    Args:
        id: the capability id, e.g. ``"notes.search"``.
        description: one line for planners and auditors (default: the docstring).
        cost_estimate: e.g. ``{"usd": 0.02, "tokens": 1500}``, or a number alone: US
            dollars (``0.02`` is ``{"usd": 0.02}``); an estimate, never booked.
        side_effects: the capability changes the world (auditors list these).
        terminal: calling it ends a planner run.
        annotations: free-form tool annotations (e.g. ``{"tags": "read-only"}``).
        timeout_s: seconds a call may run; past it the invocation is recorded as
            failed and ``CapabilityTimeout`` raised (a sync handler is left to
            finish in its worker thread: Python cannot stop a thread).
        parallel_safe: False: when a model asks for several tool calls in one
            turn, a call of this capability runs alone, never beside another.
        preconditions: what must hold for a call: strings (listed to planners and in
            the manifest) and zero-argument callables, checked before each call (a
            falsy result or an exception refuses the call, recorded ``refused``; a
            planner does not offer the capability while one fails).
        high_risk: a call needs a human reviewer's decision (AI Act Art. 14): recorded
            on the capability (``trails:highRisk``) for the ``human-oversight`` control;
            a tool policy with a ``review`` rule for it asks the reviewer.
        screen_output: its output must be screened before a model reads it (text from
            outside: web pages, e-mail): recorded (``trails:screenOutput``) for the
            ``screened-tool-output`` control; ``Session(screen_output=)`` screens it.
        granted_to: the principals (ids, as ``Session(principal=)``) the capability is
            granted to, recorded with each call (``trails:grantedTo``) so the
            ``call-within-grant`` control finds a call by anyone else; a tool policy
            refuses such calls ahead of time. None: no grant is declared.

    Raises:
        UserError: an empty id, an unsupported signature, an id or description
            that is not valid Unicode text, or a ``cost_estimate`` that is not a
            number at least 0 or a mapping of names to such numbers.
    """
    if not isinstance(id, str) or not id.strip():
        raise UserError("capability id must be a non-empty string")
    check_text(id, "capability id")
    if timeout_s is not None and (
        isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or timeout_s <= 0
    ):
        raise UserError(
            f"capability {id!r}: timeout_s must be a positive number, not {timeout_s!r}"
        )

    if not isinstance(parallel_safe, bool):
        raise UserError(f"capability {id!r}: parallel_safe must be True or False")
    conditions = _preconditions(id, preconditions)
    estimate = _cost_estimate(id, cost_estimate)
    marks = _marks(id, high_risk, screen_output, granted_to)

    def register(fn: F) -> F:
        spec = _build_spec(
            fn,
            id=id,
            description=description,
            cost_estimate=estimate,
            side_effects=side_effects,
            terminal=terminal,
            annotations=annotations,
            timeout_s=None if timeout_s is None else float(timeout_s),
            parallel_safe=parallel_safe,
            preconditions=conditions,
            marks=marks,
        )
        check_text(spec.description, f"capability {id!r} description")
        register_spec(spec)
        fn.__trails_capability__ = spec  # type: ignore[attr-defined]
        return fn

    return register


def _marks(id: str, high_risk: Any, screen_output: Any, granted_to: Any) -> dict[str, Any]:
    """``high_risk``, ``screen_output`` and ``granted_to``, checked.

    Raises:
        UserError: a flag that is not a bool, or a grant that is not a list of principal ids.
    """
    for name, flag in (("high_risk", high_risk), ("screen_output", screen_output)):
        if not isinstance(flag, bool):
            raise UserError(f"capability {id!r}: {name} must be True or False, not {flag!r}")
    grant: tuple[str, ...] = ()
    if granted_to is not None:
        if isinstance(granted_to, str) or not isinstance(granted_to, Sequence):
            raise UserError(
                f"capability {id!r}: granted_to must be a list of principal ids, not {granted_to!r}"
            )
        if not all(isinstance(p, str) and p.strip() for p in granted_to):
            raise UserError(
                f"capability {id!r}: granted_to must hold non-empty principal ids, not {granted_to!r}"
            )
        for principal in granted_to:
            check_text(principal, f"capability {id!r} granted_to")
        grant = tuple(dict.fromkeys(granted_to))
    return {"high_risk": high_risk, "screen_output": screen_output, "granted_to": grant}


#: Built-in capability families registered on first lookup, so ``import trails`` stays
#: light: id prefix -> the module whose ``register()`` registers them.
_BUILT_IN: dict[str, str] = {"memory.": "trails.memory.api"}


def _register_built_in(capability_id: str) -> bool:
    """Register the built-in family ``capability_id`` belongs to; whether there is one."""
    for prefix, module in _BUILT_IN.items():
        if capability_id.startswith(prefix):
            register = getattr(importlib.import_module(module), "register", None)
            if callable(register):
                register()
                return True
    return False


def get_capability(capability_id: str) -> CapabilitySpec:
    """The registered capability ``capability_id``.

    A built-in id (``memory.learn``, ``memory.recall`` ...) is registered on its
    first lookup when nothing has registered it yet.

    Raises:
        UnknownCapability: nothing is registered under that id.
    """
    spec = _handlers.get(capability_id)
    if spec is None and _register_built_in(capability_id):
        spec = _handlers.get(capability_id)
    if spec is None:
        raise UnknownCapability(capability_id, list(_handlers))
    return spec


def all_capabilities() -> list[CapabilitySpec]:
    """Every registered capability, in registration order."""
    with _lock:
        return list(_handlers.values())


def register_spec(spec: CapabilitySpec) -> CapabilitySpec:
    """Register a built spec (a tool mounted from elsewhere), replacing one of its id."""
    with _lock:
        _handlers.pop(spec.id, None)
        _handlers[spec.id] = spec
    return spec


def unregister(capability_id: str) -> None:
    """Remove a capability (tests, plugins that unload)."""
    with _lock:
        _handlers.pop(capability_id, None)
