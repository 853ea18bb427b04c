"""The one exception tree of trails.

Every error trails raises on purpose is a ``TrailsError``. Backend exceptions
(pyoxigraph, httpx, provider SDKs) are translated at the boundary with
``raise ... from exc`` so callers catch one tree, and the original stays on
``__cause__``. Misuse, run failures and control-flow signals are kept apart::

    TrailsError
    ├── UserError                  misuse: the caller must change something
    │   ├── ConfigError            bad trails.toml / environment value
    │   ├── UnknownCapability      invoke() of an id nobody registered
    │   ├── ValidationError        arguments that do not fit a capability
    │   ├── QueryError             the query pack and ad-hoc SPARQL
    │   │   ├── UnknownQuery
    │   │   ├── QuerySyntaxError   carries line / column when known
    │   │   ├── QueryParameterError
    │   │   └── QueryRefused       the endpoint will not run it (update, SERVICE, limits)
    │   ├── RDFSyntaxError         data to load or import does not parse
    │   ├── ExportError            an export cannot be written as asked (unwritable path ...)
    │   │   └── ExportRefused      an export rule forbids it (assurance level, domain)
    │   ├── SessionError           replay / persist misuse (no such session ...)
    │   │   ├── ContentErased      replay met content that was erased (names step and erasure)
    │   │   └── SessionTaken       an id the store holds (another principal's, ended, open)
    │   ├── NotAStore              a folder to read is not a store, or one to create is not empty
    │   ├── ControlError           a control file is refused (syntax, prefix, update, field)
    │   └── MemoryInputError       bad memory input (range, scope, missing id)
    ├── RunError                   something failed while running
    │   ├── CapabilityError        a handler raised; the cause is attached
    │   │   └── CapabilityTimeout  it ran past its timeout_s
    │   ├── QueryTimeout           a query ran past its time limit and was stopped
    │   ├── StoreError             the store failed or refused
    │   │   ├── StoreLockedError   the directory is held by another process
    │   │   ├── StoreReadOnlyError a write asked of a read-only snapshot
    │   │   └── RemoteStoreError   a SPARQL server failed: HTTP status and its message
    │   ├── ModelAPIError          an LLM provider failed (subclasses per kind)
    │   ├── ReplayMismatch         a replayed run asked for an unrecorded completion
    │   ├── ReplyParseError        an LLM reply lacks the JSON a planner asked for
    │   └── VerificationError      a seal or ledger check could not run
    └── Signal                     control flow, not failure
        ├── PolicyDenied           a tool policy said no
        ├── PreconditionFailed     a capability's precondition did not hold
        └── BudgetExceeded         a budget would be crossed
"""

from __future__ import annotations

__all__ = [
    "BudgetExceeded",
    "CapabilityError",
    "CapabilityTimeout",
    "ConfigError",
    "ContentErased",
    "ControlError",
    "ExportError",
    "ExportRefused",
    "MemoryInputError",
    "ModelAPIError",
    "NotAStore",
    "PolicyDenied",
    "PreconditionFailed",
    "QueryError",
    "QueryParameterError",
    "QueryRefused",
    "QuerySyntaxError",
    "QueryTimeout",
    "RDFSyntaxError",
    "RemoteStoreError",
    "ReplayMismatch",
    "ReplyParseError",
    "RunError",
    "SessionError",
    "SessionTaken",
    "Signal",
    "StoreError",
    "StoreLockedError",
    "StoreReadOnlyError",
    "TrailsError",
    "UnknownCapability",
    "UnknownQuery",
    "UserError",
    "ValidationError",
    "VerificationError",
]


class TrailsError(Exception):
    """Base of every error trails raises on purpose."""


class UserError(TrailsError):
    """Misuse: the caller has to change code, input or configuration."""


class ConfigError(UserError):
    """A configuration value (environment or trails.toml) is invalid."""


class UnknownCapability(UserError):
    """``invoke`` was asked for a capability id that is not registered."""

    def __init__(self, capability_id: str, known: list[str] | None = None) -> None:
        self.capability_id = capability_id
        hint = f" (registered: {', '.join(known[:10])})" if known else ""
        super().__init__(f"unknown capability {capability_id!r}{hint}")


class ValidationError(UserError):
    """Arguments do not fit the capability's signature."""

    def __init__(self, capability_id: str, detail: str) -> None:
        self.capability_id = capability_id
        self.detail = detail
        super().__init__(f"invalid arguments for {capability_id!r}: {detail}")


class QueryError(UserError):
    """Base for query pack and SPARQL query problems."""


class UnknownQuery(QueryError):
    """No query of that name in the pack."""


class QuerySyntaxError(QueryError):
    """The SPARQL text does not parse; ``line``/``column`` when the parser says."""

    def __init__(
        self, message: str, *, source: str = "", line: int | None = None, column: int | None = None
    ) -> None:
        self.source = source
        self.line = line
        self.column = column
        where = f" at line {line}, column {column}" if line is not None else ""
        prefix = f"{source}: " if source else ""
        super().__init__(f"{prefix}SPARQL syntax error{where}: {message}")


class QueryParameterError(QueryError):
    """A query parameter is missing, undeclared, unused or of the wrong type."""


class QueryRefused(QueryError):
    """The SPARQL endpoint refuses a request: an update, ``SERVICE``, or a size limit.

    ``status`` is the HTTP status the endpoint answers with (400, 403, 406, 413 ...).
    """

    def __init__(self, message: str, *, status: int = 403) -> None:
        self.status = status
        super().__init__(message)


class RDFSyntaxError(UserError):
    """RDF data given to ``load`` / ``trails import`` does not parse; nothing was loaded."""


class ExportError(UserError):
    """An export cannot be written as asked (unwritable path, format that cannot hold it)."""


class ExportRefused(ExportError):
    """An export rule forbids the export (ADR-0013: an assurance level that may not leave its domain)."""


class SessionError(UserError):
    """A session cannot be persisted, replayed or continued as asked."""


class ContentErased(SessionError):
    """A session cannot be replayed: content it needs was erased (the message names the
    step, and who erased it, when and why)."""


class SessionTaken(SessionError):
    """A session cannot be opened under an id the store already holds.

    A session id names one session, written by the principal and the writer that
    started it: an id that belongs to another principal, or names a session that has
    ended (a session is never reopened), that is open in another writer, or a graph
    that holds other data, is refused before anything is written. ``session_id`` is
    the id, ``reason`` one of ``"principal"``, ``"ended"``, ``"open"``, ``"data"``,
    ``"removed"``, ``"starting"`` (what ``trails.prov.starts`` says each means).
    """

    def __init__(self, message: str, *, session_id: str = "", reason: str = "") -> None:
        self.session_id = session_id
        self.reason = reason
        super().__init__(message)


class NotAStore(UserError):
    """A location is not a trails store: nothing to read there, or not empty enough to create one.

    Reading never creates a store (a mistyped path must not answer "nothing recorded"),
    and creating one never takes over a folder that holds other files. ``location`` is
    the path; ``creatable`` says whether a store could be created there (it is missing
    or an empty folder).
    """

    def __init__(self, message: str, *, location: str = "", creatable: bool = False) -> None:
        self.location = location
        self.creatable = creatable
        super().__init__(message)


class ControlError(UserError):
    """A control file (TOML and its check) is refused before anything runs."""


class MemoryInputError(UserError):
    """Bad input to the agent memory (confidence range, empty content, unknown id)."""


class RunError(TrailsError):
    """Something failed while running."""


class CapabilityError(RunError):
    """A capability handler raised; the original exception is ``__cause__``."""

    def __init__(self, capability_id: str, message: str) -> None:
        self.capability_id = capability_id
        super().__init__(f"capability {capability_id!r} failed: {message}")


class CapabilityTimeout(CapabilityError):
    """A capability ran past its ``timeout_s``; the invocation is recorded as failed."""

    def __init__(self, capability_id: str, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        super().__init__(capability_id, f"timed out after {timeout_s:g} s")


class QueryTimeout(RunError):
    """A query ran past its time limit; its evaluation was stopped."""

    def __init__(self, message: str, *, limit: float | None = None) -> None:
        self.limit = limit
        super().__init__(message)


class StoreError(RunError):
    """The store failed or refused an operation."""


class StoreLockedError(StoreError):
    """An on-disk store is already opened by another process."""


class StoreReadOnlyError(StoreError):
    """A write was asked of a store opened read-only (a snapshot another process is writing)."""


class RemoteStoreError(StoreError):
    """A SPARQL server refused a request or could not be reached.

    ``status`` is the HTTP status (``None`` when no answer came), ``server_message``
    what the server said, ``url`` the endpoint (without credentials).
    """

    def __init__(
        self, message: str, *, status: int | None = None, server_message: str = "", url: str = ""
    ) -> None:
        self.status = status
        self.server_message = server_message
        self.url = url
        super().__init__(message)


class ModelAPIError(RunError):
    """An LLM provider call failed. Subclasses in ``trails.llm.errors`` say which way."""

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        status: int | None = None,
        request_id: str | None = None,
    ) -> None:
        self.provider = provider
        self.status = status
        self.request_id = request_id
        super().__init__(message)


class ReplayMismatch(RunError):
    """A replayed run made a request that the recording does not contain.

    ``step`` is the planner step that asked, ``nearest`` the activity IRI of
    the closest recorded request, ``differing`` the first difference between
    them (a message, the parameters or the model), all when known.
    """

    def __init__(
        self,
        message: str,
        *,
        step: int | None = None,
        nearest: str | None = None,
        differing: str | None = None,
    ) -> None:
        self.step = step
        self.nearest = nearest
        self.differing = differing
        super().__init__(message)


class ReplyParseError(RunError):
    """An LLM reply does not hold the JSON turn, plan or verdict a planner asked for."""


class VerificationError(RunError):
    """Seals or the ledger could not be checked (no ledger, unreadable key ...)."""


class Signal(TrailsError):
    """Control flow: not a failure of trails, a rule that stopped something."""


class PolicyDenied(Signal):
    """A tool policy refused a capability invocation."""

    def __init__(self, capability_id: str, reason: str) -> None:
        self.capability_id = capability_id
        self.reason = reason
        super().__init__(f"policy denied {capability_id!r}: {reason}")


class PreconditionFailed(Signal):
    """A capability's precondition did not hold, so the call was refused (and recorded)."""

    def __init__(self, capability_id: str, condition: str) -> None:
        self.capability_id = capability_id
        self.condition = condition
        super().__init__(f"{capability_id!r} refused: precondition not met: {condition}")


class BudgetExceeded(Signal):
    """Spending would cross a budget; raised before the spend starts."""

    def __init__(self, kind: str, limit: float, observed: float, principal: str = "") -> None:
        self.kind = kind
        self.limit = limit
        self.observed = observed
        self.principal = principal
        who = f" for {principal}" if principal else ""
        super().__init__(f"budget {kind} exceeded{who}: {observed} of {limit}")
