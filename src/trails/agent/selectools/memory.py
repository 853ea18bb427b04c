"""selectools' ``ConversationMemory`` and ``session_store`` continuation, over trails sessions.

``ConversationMemory(max_messages=, max_tokens=)`` is the window of the one ``Session`` an
agent keeps across its runs: the same sliding window, each eviction recorded.

``AgentConfig(session_store=store, session_id="user-123")`` continues a conversation
across agents and processes. A trails session is never reopened once it has ended, and its
id names one session graph, so a conversation key names a chain of sessions:
``user-123``, then ``user-123~2``, ``user-123~3`` ... Each new agent on the key starts the
next session of the chain with the history of the last one loaded from its saved
projection (a recorded ``trails:SessionLoad``), and ``prov:wasInformedBy`` the session it
continues. The chain belongs to the principal who started it: another principal's key is
refused with ``SessionTaken``, as any taken session id is.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from trails.agent.history import DEFAULT_WINDOW_TOKENS
from trails.config import load_settings
from trails.errors import SessionError, SessionTaken, UserError
from trails.prov.events import Event
from trails.prov.iri import Minter, check_session_id
from trails.prov.vocab import NAMESPACES, PROV
from trails.store import IRI, Solutions, to_python

if TYPE_CHECKING:
    from trails.agent.context import Session
    from trails.llm.types import Message
    from trails.prov.builder import QuadBuilder
    from trails.store.base import Store

__all__ = ["ConversationMemory", "SessionContinued", "continue_chain", "session_chain"]

_PREFIXES = "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in NAMESPACES.items())

_STARTED = (
    _PREFIXES
    + """SELECT ?session ?principal WHERE { GRAPH ?session {
  ?session a trails:Session ; prov:wasAssociatedWith ?agent .
  ?agent trails:principalId ?principal } } LIMIT 1"""
)


class ConversationMemory:
    """A sliding window of the conversation, kept across an agent's runs.

    Args:
        max_messages: the most messages kept (the system prompt aside).
        max_tokens: the most tokens kept (None: the window of the model, less a margin).

    Raises:
        UserError: a limit that is not a positive int.
    """

    def __init__(self, max_messages: int = 20, max_tokens: int | None = None) -> None:
        for key, value in (("max_messages", max_messages), ("max_tokens", max_tokens)):
            if value is None and key == "max_tokens":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UserError(f"ConversationMemory {key}= must be an int >= 1, not {value!r}")
        self.max_messages = max_messages
        self.max_tokens = max_tokens
        self.session: Session | None = None
        self._pending: list[Message] = []

    def session_options(self) -> dict[str, Any]:
        """The ``Session`` keywords of this window."""
        tokens = DEFAULT_WINDOW_TOKENS if self.max_tokens is None else self.max_tokens
        return {"max_messages": self.max_messages, "max_tokens": tokens}

    def bind(self, session: Session) -> None:
        """Hold ``session``'s history from now on (messages added before go into it)."""
        self.session = session
        pending, self._pending = self._pending, []
        self.add_many(pending)

    def add(self, message: Message) -> None:
        """Append one message to the window."""
        if self.session is None:
            self._pending.append(message)
        else:
            self.session.history.append(str(message.role), message.content)

    def add_many(self, messages: Iterable[Message]) -> None:
        for message in messages:
            self.add(message)

    def get_history(self) -> list[Message]:
        """The messages in the window, oldest first (the system prompt included)."""
        if self.session is None:
            return list(self._pending)
        return self.session.history.messages()

    @property
    def summary(self) -> str | None:
        """The summary standing in for evicted messages (``summarize_on_trim``), if any."""
        entry = None if self.session is None else self.session.history.summary
        return None if entry is None else entry.content

    def clear(self) -> None:
        """Forget the conversation: the agent's next run starts a new session."""
        self.session = None
        self._pending = []

    def __len__(self) -> int:
        return len(self.get_history())


class SessionContinued(Event):
    """A session of a conversation chain continues the one before: ``prov:wasInformedBy``."""

    previous: str
    key: str

    def emit(self, b: QuadBuilder) -> None:
        b.add(self.graph, PROV.wasInformedBy, IRI.trusted(self.previous))


def session_chain(store: Store, key: str) -> list[tuple[str, str, str]]:
    """The sessions of conversation ``key`` in ``store``: ``(id, IRI, principal)``, in order."""
    minter = Minter(load_settings().base_iri)
    chain: list[tuple[str, str, str]] = []
    n = 1
    while True:
        sid = key if n == 1 else f"{key}~{n}"
        iri = minter.session(sid)
        found = store.query(_STARTED, {"session": iri})
        assert isinstance(found, Solutions)
        principals = [str(to_python(r["principal"])) for r in found]
        if not principals:
            return chain
        chain.append((sid, str(iri), principals[0]))
        n += 1


def continue_chain(
    store: Store, key: str, principal: str, build: Any, *, load: bool = True
) -> Session:
    """The next session of conversation ``key`` for ``principal``, built by ``build(session_id)``.

    The first session of a key is the key itself. A later one loads the last one's saved
    history (``load``), records the load, and is ``prov:wasInformedBy`` it.

    Raises:
        SessionTaken: the key's sessions are another principal's; nothing was written.
        SessionError: the key cannot name a session.
    """
    check_session_id(key, "AgentConfig session_id")
    chain = session_chain(store, key)
    if not chain:
        session: Session = build(key)
        return session
    _, last_iri, owner = chain[-1]
    if owner != principal:
        raise SessionTaken(
            f"session id {key!r} is taken: its conversation is another principal's",
            session_id=key,
            reason="principal",
        )
    session = build(f"{key}~{len(chain) + 1}")
    replayed = None
    if load:
        from trails.agent.context import Session as SessionClass

        try:
            replayed = SessionClass.replay(last_iri, store=store)
        except SessionError:
            replayed = None  # never saved: the chain goes on, with an empty history
    if replayed is not None:
        session.history.load(list(replayed.history.entries))
    ctx = session.context
    ctx.recorder.record(SessionContinued(session=str(ctx.session), previous=last_iri, key=key))
    if replayed is not None and replayed.replayed_from is not None:
        from trails.agent.projection import record_fork

        record_fork(ctx, replayed.replayed_from, message_count=len(session.history))
    return session
