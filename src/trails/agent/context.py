"""``Session``: the conversation state a planner writes into.

A ``Session`` is the ledger of one conversation with an agent: its token-windowed
history (system prompt, goals, assistant turns, observations), the envelopes of
every capability invocation made in it, free-form metadata (parsed plans,
critiques), the principal it acts for, and its strategy and budget defaults.
Reusing a session continues the conversation, in the same provenance graph.

The session's provenance context is opened lazily, on the first run, in the
store the session was given (or the process default store), so building a
``Session`` costs nothing and records nothing. Every run of a session is
recorded in that one session; it ends (and is sealed, when sealing is on) on
``close()`` or leaving a ``with`` block, else when the session and its
contexts are garbage, and at the latest at interpreter exit
(``trails.kernel.lifecycle``). Everything a session holds is
plain data (strings, numbers, dicts, ``InvocationRecord`` envelopes), so it can
be written to RDF and rebuilt from it.

This module imports no planner, statically or otherwise: ``run`` finds the
planner its strategy names in the registry of ``trails.agent.strategies``, and
``PlanResult`` comes from ``trails.agent.result``. The history window
(``TokenWindow``, ``HistoryEntry``, ``estimate_tokens``) lives in
``trails.agent.history`` and the data side of persistence in
``trails.agent.projection``; both are re-exported or used from here, and
neither imports this module.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trails.agent.cost_warning import cost_watch
from trails.agent.evictions import EvictionRecorder, Summarizer
from trails.agent.history import (
    DEFAULT_WINDOW_TOKENS,
    LOCAL_CONTEXT_TOKENS,
    HistoryEntry,
    TokenWindow,
    estimate_tokens,
    window_for,
)
from trails.agent.knowledge import SessionKnowledge
from trails.agent.screening import OutputScreen, output_screens
from trails.agent.session_events import (
    check_trace_metadata,
    record_agent_name,
    record_trace_metadata,
)
from trails.agent.strategies import STRATEGIES
from trails.config import load_settings
from trails.errors import ConfigError, SessionError, TrailsError, UserError
from trails.kernel.context import Context, InvocationRecord, minted_session_id, now
from trails.kernel.lifecycle import end_status, interruption
from trails.prov.iri import check_session_id
from trails.prov.recorder import Recorder, default_recorder
from trails.text import check_text

if TYPE_CHECKING:
    from trails.agent.projection import ReplayOrigin
    from trails.agent.result import PlanResult
    from trails.prov.projection import Projection
    from trails.store.base import Store
    from trails.store.terms import IRI

__all__ = [
    "BUDGET_KEYS",
    "AuthState",
    "HistoryEntry",
    "Session",
    "TokenWindow",
    "estimate_tokens",
]

log = logging.getLogger("trails.agent")

#: ``Session.new(budget=...)`` keys and the planner keyword each one sets.
BUDGET_KEYS: dict[str, str] = {
    "usd": "max_cost_usd",
    "tokens": "max_tokens",
    "wall_time_s": "max_wall_time_s",
}


@dataclass(frozen=True)
class AuthState:
    """Who a session acts for: its principal, that principal's DID, and the credential given.

    Attributes:
        principal: the session's principal.
        did: the DID the agent acts as: ``auth=`` when it is a DID (or a DID
            document's ``id``), else the principal when it is a DID, else None.
        credential: the credential given as ``Session(auth=...)`` (a biscuit, a
            token, a DID document ...), kept as given; never persisted.
    """

    principal: str
    did: str | None = None
    credential: Any = None

    @classmethod
    def of(cls, principal: str, auth: Any) -> AuthState:
        """The auth state of a session with ``principal`` given ``auth=``."""
        if isinstance(auth, AuthState):
            return auth
        did: str | None = principal if principal.startswith("did:") else None
        if isinstance(auth, str) and auth.startswith("did:"):
            did = auth
        elif isinstance(auth, Mapping):
            given = auth.get("did") or auth.get("id")
            if isinstance(given, str) and given.startswith("did:"):
                did = given
        return cls(principal=principal, did=did, credential=auth)


def _governance(
    policy: Any = None,
    approver: Any = None,
    approval_timeout_s: float | None = None,
    observers: Any = (),
) -> dict[str, Any]:
    """Check ``policy=``, ``approver=``, ``approval_timeout_s=``, ``observers=`` of a session."""
    from trails.kernel.context import ToolPolicy
    from trails.kernel.observe import check_observers

    if policy is not None and not isinstance(policy, ToolPolicy):
        raise UserError(f"policy= must be a ToolPolicy (name and decide()), not {policy!r}")
    if approver is not None and not callable(approver):
        raise UserError(f"approver= must be callable, not {approver!r}")
    timeout = approval_timeout_s
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
    ):
        raise UserError(f"approval_timeout_s= must be a positive number, not {timeout!r}")
    return {
        "policy": policy,
        "approver": approver,
        "approval_timeout_s": None if timeout is None else float(timeout),
        "observers": check_observers(observers),
    }


def _normalise_strategy(name: str, *, source: str) -> str:
    key = name.strip().lower().replace("-", "_")
    if key not in STRATEGIES:
        message = f"unknown strategy {name!r} ({source}); choose one of {', '.join(STRATEGIES)}"
        raise ConfigError(message) if source != "strategy=" else UserError(message)
    return key


def _check_budget(budget: Mapping[str, float] | None) -> dict[str, float]:
    if budget is None:
        return {}
    if not isinstance(budget, Mapping):
        raise UserError(f"budget must be a dict like {{'usd': 0.5}}, not {type(budget).__name__}")
    unknown = sorted(set(budget) - set(BUDGET_KEYS))
    if unknown:
        raise UserError(
            f"unknown budget key(s) {', '.join(map(repr, unknown))}; use {', '.join(BUDGET_KEYS)}"
        )
    clean: dict[str, float] = {}
    for key, value in budget.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise UserError(f"budget[{key!r}] must be a number >= 0, not {value!r}")
        clean[key] = value
    return clean


class Session:
    """Per-conversation state: history, invocations, auth, agent card, metadata.

    Args:
        principal: who the agent acts for (a DID or any principal id).
        max_tokens: the history window's token budget. Left at its default (32,000), the
            window is sized from the model the session first runs with: its context window
            minus a safety margin (``window_for``; 4,096 tokens for a local model the
            catalogue does not know; 32,000 stays when the model's window is unknown).
        pin_head: how many leading history entries are never evicted.
        auth: a credential (a biscuit, token, DID or DID document), kept as
            ``session.auth.credential``; ``session.auth`` is an ``AuthState`` with
            the principal and its DID (``session.auth.did``).
        card: the bound agent card, kept as given.
        store: the store to record into (default: the process default store).
        recorder: a recorder to record with (takes precedence over ``store``).
        strategy: the planner ``run`` uses when none is named (default: settings).
        budget: default run budget: ``usd``, ``tokens``, ``wall_time_s``.
        llm: the LLM client ``run`` uses when none is passed (default: the
            configured one, ``TRAILS_LLM`` / ``[llm] model``, built on first use).
        session_id: the session id (default: a new UUID); names the session graph. It
            must be free: the first run refuses an id the store already holds
            (``SessionTaken``: another principal's session, one that has ended, one
            open elsewhere), and a session continues only as this same object.
        policy: the tool policy every call of the session is judged by (a
            ``RulePolicy`` or any ``ToolPolicy``; default: ``[policy]`` of trails.toml).
        approver: who is asked when the policy says ``review``:
            ``approver(spec, args, reason)``, sync or async, returning a bool or an
            ``Approval``; without one, review means no.
        approval_timeout_s: seconds an approver has to answer; then the call is denied.
        observers: lifecycle observers of every run of the session (see ``trails.kernel.observe``).
        fallback: the strategy ``run`` switches to when a run of ``strategy`` stops
            with an error; the second run is recorded informed by the failed one.
        summarize_on_trim: ``fn(entries) -> str``, called when the history window
            drops entries: the text stands in for them in the window; or an LLM
            client, asked for that summary (its completion recorded in the
            session). Every eviction is recorded either way (``trails.agent.evictions``).
        max_messages: the most unpinned entries the history window keeps (None:
            only ``max_tokens`` bounds it).
        trace_metadata: free-form metadata of the session (seed 002's
            ``trace_metadata``: user id, environment ...), recorded when it starts
            as a ``trails:TraceMetadata`` entity (``trails.agent.session_events``).
        entity_memory: an ``EntityMemory``: each run's entities are learned
            into memory and shown to the next run (``trails.agent.knowledge``).
        knowledge_graph: a ``KnowledgeGraphMemory``: the same for relationship triples.
        knowledge_memory: a ``KnowledgeMemory``: the principal's memories, shown to each
            run as ``[Long-term Memory]`` and ``[Recent Memory]`` (``trails.agent.knowledge``).
        cost_warning_usd: once the session's completions have cost this much (USD), a
            ``CostWarning`` is issued and logged, once; the runs go on
            (``trails.agent.cost_warning``; ``max_cost_usd=`` is the hard stop).
        screen_output: a function ``(capability_id, output) -> reason | None`` (or a
            list of them) that reads each capability's output before the model does: a
            reason withholds the output from the model (it sees ``error: output
            withheld: <reason>``) and is recorded as a denying ``trails:PolicyDecision``
            informed by the invocation, whose recorded output stays as it was
            (seed 002's output screening).
        name: the agent's name (seed 002's ``agent.name``): recorded as the session's
            ``prov:SoftwareAgent``, acting for the principal, and as the session's
            ``trails:agentName``.

    Raises:
        UserError: an empty principal, a bad budget, an unknown strategy, a
            ``cost_warning_usd`` that is not a positive number or a ``screen_output``
            that is not a function or a list of them.
        SessionError: a ``session_id`` that cannot name a session (empty, blank, too
            long, a character an IRI path segment cannot hold as it is).
    """

    def __init__(
        self,
        *,
        principal: str,
        max_tokens: int = DEFAULT_WINDOW_TOKENS,
        pin_head: int = 1,
        auth: Any = None,
        card: Any = None,
        store: Store | None = None,
        recorder: Recorder | None = None,
        strategy: str | None = None,
        budget: Mapping[str, float] | None = None,
        llm: Any = None,
        session_id: str | None = None,
        policy: Any = None,
        approver: Any = None,
        approval_timeout_s: float | None = None,
        observers: Any = (),
        fallback: str | None = None,
        summarize_on_trim: Summarizer | Any = None,
        max_messages: int | None = None,
        trace_metadata: Mapping[str, Any] | None = None,
        entity_memory: Any = None,
        knowledge_graph: Any = None,
        cost_warning_usd: float | None = None,
        knowledge_memory: Any = None,
        screen_output: OutputScreen | Sequence[OutputScreen] | None = None,
        name: str | None = None,
    ) -> None:
        if not isinstance(principal, str) or not principal.strip():
            raise UserError(f"Session principal must be a non-empty str, not {principal!r}")
        check_text(principal, "Session principal")
        check_text(session_id, "Session session_id")
        if session_id is not None:
            check_session_id(session_id, "Session session_id")
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise UserError(f"Session name must be a non-empty str, not {name!r}")
        check_text(name, "Session name")
        self.principal = principal
        self.name = name
        self.id = session_id or minted_session_id()
        self.history = TokenWindow(
            max_tokens=int(max_tokens) if max_tokens is DEFAULT_WINDOW_TOKENS else max_tokens,
            pin_head=pin_head,
            max_messages=max_messages,
        )
        self._window_set = max_tokens is not DEFAULT_WINDOW_TOKENS
        self.history.on_evict = EvictionRecorder(self, summarize_on_trim)
        self.invocations: list[InvocationRecord] = []
        self.metadata: dict[str, Any] = {}
        self.auth = AuthState.of(principal, auth)
        self.card = card
        self.strategy = _normalise_strategy(strategy, source="strategy=") if strategy else None
        self.fallback = _normalise_strategy(fallback, source="fallback=") if fallback else None
        self.budget = _check_budget(budget)
        self.llm = llm
        self.governance = _governance(policy, approver, approval_timeout_s, observers)
        if (watch := cost_watch(cost_warning_usd)) is not None:
            watch.record = lambda event: self.context.recorder.record(event)
            watch.mint = lambda: self.context.recorder.minter.activity()
            self.governance["observers"] += (watch,)
        self.trace_metadata = check_trace_metadata(trace_metadata)
        self.knowledge = SessionKnowledge.of(entity_memory, knowledge_graph, knowledge_memory)
        self.output_screens = output_screens(screen_output)
        self._store = store
        self._recorder = recorder
        self._context: Context | None = None
        self._closed = False
        self._origin: ReplayOrigin | None = None

    def fit_window(self, llm: Any) -> None:
        """Size a window nobody set from ``llm``'s model: its context minus a margin (once).

        Called by every planner as its run starts. A ``max_tokens=`` given to the session
        stands; a model whose window the catalogue does not know leaves the default (a
        local one gets ``LOCAL_CONTEXT_TOKENS``, the context Ollama gives by default).
        """
        if self._window_set:
            return
        spec = getattr(llm, "spec", None)
        try:
            model = spec() if callable(spec) else None
        except TrailsError:
            model = None
        window = getattr(model, "context_window", None)
        if not window and getattr(model, "local", False):
            window = LOCAL_CONTEXT_TOKENS
        if isinstance(window, int) and window > 0:
            self.history.max_tokens = window_for(window)
            self._window_set = True

    @classmethod
    def new(
        cls,
        *,
        strategy: str | None = None,
        principal: str,
        budget: Mapping[str, float] | None = None,
        agent_card: Any = None,
        **kwargs: Any,
    ) -> Session:
        """A session with a strategy and a budget, ready for ``run(goal)``.

        Args:
            strategy: ``"react"``, ``"plan_and_execute"``, ``"reflexion"`` ... (default:
                ``[agent] strategy`` of trails.toml / ``TRAILS_STRATEGY``).
            principal: who the agent acts for.
            budget: ``{"usd": ..., "tokens": ..., "wall_time_s": ...}`` per run.
            agent_card: the agent card to bind (``card``).
            **kwargs: any other ``Session`` keyword (``store``, ``llm``, ``max_tokens`` ...).

        Returns:
            The new session.

        Raises:
            UserError: an unknown strategy or budget key.
        """
        if agent_card is not None:
            kwargs.setdefault("card", agent_card)
        return cls(principal=principal, strategy=strategy, budget=budget, **kwargs)

    @property
    def opened(self) -> bool:
        """Whether the session's provenance context exists (a run happened)."""
        return self._context is not None

    @property
    def closed(self) -> bool:
        """Whether ``close`` was called."""
        return self._closed

    @property
    def context(self) -> Context:
        """The session's provenance context, opened (and its start recorded) on first use.

        Raises:
            SessionError: the session was closed.
            SessionTaken: its ``session_id`` is taken in the store (nothing was written).
            StoreError: the session start could not be recorded.
        """
        if self._closed:
            raise SessionError(f"session {self.id} is closed; start a new Session")
        self._refuse_if_read_only()
        if self._context is None:
            recorder = self._recorder
            if recorder is None:
                recorder = (
                    Recorder.from_settings(store=self._store)
                    if self._store is not None
                    else default_recorder()
                )
            self._context = Context.open(
                self.principal,
                recorder=recorder,
                session_id=self.id,
                invocations=self.invocations,
                **self.governance,
            )
            record_trace_metadata(self._context, self.trace_metadata, now())
            record_agent_name(self._context, self.name)
        return self._context

    @property
    def iri(self) -> str | None:
        """The session IRI (which names its graph), once the session is open (or replayed)."""
        if self._origin is not None:
            return str(self._origin.session)
        return None if self._context is None else str(self._context.session)

    # -- persistence (see trails.agent.projection) -------------------------------

    @property
    def read_only(self) -> bool:
        """Whether this is a replayed session: it records nothing and refuses to run."""
        return self._origin is not None

    @property
    def replayed_from(self) -> ReplayOrigin | None:
        """Where a replayed session was read from (graph, session, store, completions)."""
        return self._origin

    def _refuse_if_read_only(self) -> None:
        if self._origin is not None:
            raise SessionError(
                f"session {self._origin.session} was replayed from graph {self._origin.graph} "
                "and is read-only: call fork() to continue it in a new session"
            )

    def persist(self, *, graph: str | None = None) -> IRI:
        """Write a replayable projection of this session (opt-in; idempotent).

        Args:
            graph: the named graph to write into (default: the session's own graph).

        Returns:
            The graph IRI, for ``Session.replay``.

        Raises:
            SessionError: a read-only replay, or ``graph`` is not an absolute IRI.
            StoreError: the write failed; nothing was written.
        """
        from trails.agent.projection import persist

        return persist(self, graph=graph)

    @classmethod
    def replay(cls, iri: str, *, store: Store | None = None) -> Session:
        """Rebuild a persisted session with SPARQL alone; read-only, writes nothing.

        Args:
            iri: the graph the session was persisted into, or the session IRI.
            store: the store to read (default: the process default store).

        Returns:
            The replayed, read-only session.

        Raises:
            SessionError: no such session, no projection, or an incompatible one.
        """
        from trails.agent.projection import load_projection

        projection, origin = load_projection(iri, store=store)
        session = _build(projection, session_id=projection.session_id, store=origin.store)
        session._origin = origin
        return session

    def fork(self, *, llm: Any = None, observers: Any = ()) -> Session:
        """Continue a replayed session as a new live session derived from it.

        Args:
            llm: the LLM client of the fork (default: this session's).
            observers: observers of the new session (they hear its ``session_load``).

        Returns:
            The new session; its start and its ``prov:wasDerivedFrom`` link are recorded.

        Raises:
            SessionError: this session was not replayed.
            StoreError: the fork could not be recorded.
        """
        from trails.agent.projection import fork_projection, record_fork

        origin = self._origin
        if origin is None:
            raise SessionError(
                f"session {self.id} is live, not replayed: keep running it, or persist() "
                "it, replay it and fork the replay"
            )
        new = _build(
            fork_projection(self, origin),
            session_id=None,
            store=origin.store,
            llm=llm if llm is not None else self.llm,
            observers=observers,
        )
        new.invocations.extend(self.invocations)
        record_fork(new.context, origin, message_count=len(new.history))
        return new

    def resolve_strategy(self) -> str:
        """The strategy ``run`` will use: the session's, else the configured one.

        Raises:
            ConfigError: the configured strategy is unknown.
        """
        if self.strategy is not None:
            return self.strategy
        settings = load_settings()
        return _normalise_strategy(
            settings.strategy, source=settings.sources.get("strategy", "settings")
        )

    def run(self, goal: str, *, llm: Any = None, **kwargs: Any) -> PlanResult:
        """Run ``goal`` with the session's planner, LLM client and budget.

        Args:
            goal: what the agent should achieve.
            llm: the LLM client (default: the session's ``llm``).
            **kwargs: planner keywords (``max_steps``, ``tools``, ``ctx`` ...); they
                override the session's budget.

        Returns:
            The planner's ``PlanResult``.

        Raises:
            UserError: a bad planner keyword.
            ConfigError: no client given and none configured (``TRAILS_LLM``).
            SessionError: the session was closed.
        """
        client, strategy, options = self._prepare(goal, llm, kwargs)
        result: PlanResult = STRATEGIES[strategy].run(goal, llm=client, session=self, **options)
        if result.stopped != "error" or self.fallback in (None, strategy) or "ctx" in options:
            return result
        planner, ctx, kept = self._fall_back(client, strategy, result, options)
        second: PlanResult = planner.run(goal, llm=client, session=self, ctx=ctx, **kept)
        return second

    async def arun(self, goal: str, *, llm: Any = None, **kwargs: Any) -> PlanResult:
        """``run`` for asyncio: the planner's ``arun``, same arguments, same recorded graph.

        One session holds one conversation: run one goal at a time on it (for
        several goals at once, give each its own session, as ``batch`` does).

        Raises:
            See ``run``.
        """
        client, strategy, options = self._prepare(goal, llm, kwargs)
        module: Any = STRATEGIES[strategy]
        result: PlanResult = await module.arun(goal, llm=client, session=self, **options)
        if result.stopped != "error" or self.fallback in (None, strategy) or "ctx" in options:
            return result
        planner, ctx, kept = self._fall_back(client, strategy, result, options)
        second: PlanResult = await planner.arun(goal, llm=client, session=self, ctx=ctx, **kept)
        return second

    def _prepare(
        self, goal: str, llm: Any, kwargs: dict[str, Any]
    ) -> tuple[Any, str, dict[str, Any]]:
        """The client, strategy and planner keywords of one ``run`` / ``arun``."""
        self._refuse_if_read_only()
        check_text(goal, "Session.run goal")
        client = llm if llm is not None else self.llm
        if client is None:
            from trails.llm.configured import configured_client

            client = configured_client(
                purpose="Session.run needs an LLM client: pass llm= to run() or to Session"
            )
        options: dict[str, Any] = {BUDGET_KEYS[k]: v for k, v in self.budget.items()}
        options.update(kwargs)
        return client, self.resolve_strategy(), options

    def _fall_back(
        self, client: Any, failed: str, result: PlanResult, options: dict[str, Any]
    ) -> tuple[Any, Context, dict[str, Any]]:
        """The fallback planner, its context (informed by the failed run) and its keywords."""
        import inspect

        from trails.kernel.observe import notify
        from trails.store.terms import IRI as _IRI

        assert self.fallback is not None and result.activity_iri is not None
        planner: Any = STRATEGIES[self.fallback]
        accepted = inspect.signature(planner.run).parameters
        kept = {k: v for k, v in options.items() if k in accepted}
        ctx = self.context.child(parent=_IRI.trusted(result.activity_iri))
        notify(ctx, "fallback", failed=failed, next=self.fallback, error=result.error)
        log.warning("%s run failed (%s); falling back to %s", failed, result.error, self.fallback)
        return planner, ctx, kept

    def close(self, status: str = "ok", *, reason: str | None = None) -> None:
        """Record the end of the session; later runs raise ``SessionError``. Idempotent.

        Args:
            status: the recorded end status (``"ok"``, ``"error"``, ``"interrupted"``).
            reason: with ``"interrupted"``, what interrupted it.
        """
        if self._closed:
            return
        self._closed = True
        if self._context is not None:
            self._context.close(status, reason=reason)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.close(end_status(exc), reason=interruption(exc))

    def __repr__(self) -> str:
        return (
            f"Session(id={self.id!r}, principal={self.principal!r}, "
            f"history={len(self.history)} entries, invocations={len(self.invocations)})"
        )


def _build(
    projection: Projection, *, session_id: str | None, store: Store, **extra: Any
) -> Session:
    """A ``Session`` holding a projection's state (``Session.replay``, ``Session.fork``)."""
    from trails.agent.projection import history_entries, invocation_records

    session = Session(
        principal=projection.principal,
        max_tokens=projection.window_tokens,
        pin_head=projection.pin_head,
        card=copy.deepcopy(projection.card),
        store=store,
        strategy=projection.strategy,
        budget=projection.budget,
        **extra,
    )
    if session_id is not None:  # as recorded: a replay never opens it, so it is not checked
        session.id = session_id
    session.history.load(history_entries(projection))
    session.invocations.extend(invocation_records(projection))
    session.metadata.update(copy.deepcopy(projection.metadata))
    return session
