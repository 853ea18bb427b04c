"""The conversation history of a session: ``HistoryEntry``, ``TokenWindow``, token estimates.

These are plain data, shared by ``Session`` (``trails.agent.context``), which
holds a ``TokenWindow``, and by the persistence of a session
(``trails.agent.projection``), which writes the entries out and reads them back.
Keeping them here lets persistence work on a session's data without importing
``Session``'s module. ``trails.agent.context`` re-exports every name (the same objects).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from trails.errors import UserError
from trails.llm.types import Message, Role
from trails.text import check_text

__all__ = [
    "DEFAULT_WINDOW_TOKENS",
    "LOCAL_CONTEXT_TOKENS",
    "HistoryEntry",
    "TokenWindow",
    "estimate_tokens",
    "window_for",
]

_ROLES = ("system", "user", "assistant")


def estimate_tokens(text: str) -> int:
    """A provider-neutral token estimate: about four characters a token, at least one.

    Args:
        text: the message content.

    Returns:
        The estimated token count.
    """
    return max(1, (len(text) + 3) // 4)


@dataclass(frozen=True)
class HistoryEntry:
    """One message of a ``TokenWindow``: role, content, token count, pinned or not.

    ``summary`` marks the entry that summarises evicted ones (``on_evict``): it stays
    right after the pinned head and is replaced, never evicted, by the next summary.
    """

    role: Role
    content: str
    tokens: int
    pinned: bool = False
    summary: bool = False

    def message(self) -> Message:
        """This entry as an LLM ``Message`` (a pinned system prompt is a cache breakpoint)."""
        return Message(self.role, self.content, cache=self.pinned and self.role == "system")


class _Unset(int):
    """An int that is 32,000 and also says "nobody chose it" (compared by identity)."""


#: The window when nothing says the model's context: 32,000, as the trails guide's signatures
#: write it. A ``Session`` given this very object sizes its window from the model it first
#: runs with (``window_for``, ADR-0018); any ``max_tokens=`` a caller passes stands.
DEFAULT_WINDOW_TOKENS: int = _Unset(32_000)
#: A local model the catalogue does not know gets Ollama's default context (``num_ctx``).
LOCAL_CONTEXT_TOKENS = 4_096


def window_for(context_window: int) -> int:
    """The history budget for a model's context window: the window minus a safety margin.

    The margin keeps room for the reply and what the window does not count (tool schemas,
    the provider's framing): a tenth of the window, and at least 1,024 tokens.

    Args:
        context_window: the model's context window in tokens.

    Returns:
        The token budget of the history window (at least 1).
    """
    return max(1, context_window - max(1_024, context_window // 10))


class TokenWindow:
    """A FIFO message window with a pinned head and running-total eviction.

    The first ``pin_head`` entries are never evicted. When the running token
    total passes ``max_tokens``, or the unpinned entries outnumber
    ``max_messages``, the oldest unpinned entries are dropped until it fits
    again; the newest entry is always kept, however large.

    Each time entries are dropped, ``on_evict(dropped)`` is called (a ``Session``
    records the eviction there, ``trails.agent.evictions``); when it returns a
    text, that text enters the window as the summary of what was dropped (a
    ``user`` entry marked ``summary``, right after the pinned head), replacing
    the previous summary.

    Args:
        max_tokens: the token budget of the window.
        pin_head: how many leading entries are pinned (usually the system prompt).
        max_messages: how many unpinned entries the window keeps at most (a
            summary of evicted ones not counted); None: no message cap.
        count_tokens: how to count the tokens of a text (default: ``estimate_tokens``).
        on_evict: called with the entries each eviction dropped, oldest first;
            returns the summary to keep in their place, or None.
        evict: which entry goes next: given the entries that may go (unpinned, not the
            summary, not the newest), oldest first, it returns the index of one of them
            (default: 0, the oldest). The pluggable eviction strategy of ADR-0018.

    Raises:
        UserError: ``max_tokens`` or ``max_messages`` is not a positive int, or
            ``pin_head`` is negative; or ``evict`` chose no entry that may go.
    """

    def __init__(
        self,
        *,
        max_tokens: int = DEFAULT_WINDOW_TOKENS,
        pin_head: int = 1,
        count_tokens: Callable[[str], int] | None = None,
        on_evict: Callable[[list[HistoryEntry]], str | None] | None = None,
        max_messages: int | None = None,
        evict: Callable[[list[HistoryEntry]], int] | None = None,
    ) -> None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise UserError(f"TokenWindow max_tokens must be a positive int, not {max_tokens!r}")
        if isinstance(pin_head, bool) or not isinstance(pin_head, int) or pin_head < 0:
            raise UserError(f"TokenWindow pin_head must be an int >= 0, not {pin_head!r}")
        if max_messages is not None and (
            isinstance(max_messages, bool) or not isinstance(max_messages, int) or max_messages < 1
        ):
            raise UserError(
                f"TokenWindow max_messages must be a positive int or None, not {max_messages!r}"
            )
        self.max_tokens = max_tokens
        self.max_messages = max_messages
        self.pin_head = pin_head
        self.count_tokens = count_tokens or estimate_tokens
        self.evict = evict
        self._entries: list[HistoryEntry] = []
        self._total = 0
        self.evicted = 0
        self.on_evict = on_evict
        #: text ``set_system`` puts after every system prompt (a session's known
        #: entities and relationships, ``trails.agent.knowledge``); "" for none
        self.system_suffix = ""

    @property
    def total_tokens(self) -> int:
        """The running token total of the entries in the window."""
        return self._total

    @property
    def entries(self) -> list[HistoryEntry]:
        """A copy of the entries, oldest first."""
        return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[HistoryEntry]:
        return iter(list(self._entries))

    def __getitem__(self, index: int) -> HistoryEntry:
        return self._entries[index]

    def _entry(self, role: str, content: str, tokens: int | None) -> HistoryEntry:
        if role not in _ROLES:
            raise UserError(f"history role must be one of {', '.join(_ROLES)}, not {role!r}")
        if not isinstance(content, str):
            raise UserError(f"history content must be a str, not {type(content).__name__}")
        check_text(content, "history content")
        count = self.count_tokens(content) if tokens is None else tokens
        return HistoryEntry(role, content, count)  # type: ignore[arg-type]

    def _repin(self) -> None:
        self._entries = [
            e if e.pinned == (i < self.pin_head) else replace(e, pinned=i < self.pin_head)
            for i, e in enumerate(self._entries)
        ]

    def append(self, role: str, content: str, *, tokens: int | None = None) -> HistoryEntry:
        """Add a message at the tail, then evict from the unpinned head until it fits.

        Args:
            role: ``"system"``, ``"user"`` or ``"assistant"``.
            content: the message text.
            tokens: its token count when known (default: ``count_tokens(content)``).

        Returns:
            The stored entry.

        Raises:
            UserError: an unknown role or non-text content.
        """
        entry = self._entry(role, content, tokens)
        entry = replace(entry, pinned=len(self._entries) < self.pin_head)
        self._entries.append(entry)
        self._total += entry.tokens
        self._evict()
        return entry

    def set_system(self, content: str) -> HistoryEntry:
        """Put ``content`` as the system prompt at the head: replace it, or insert it first.

        ``system_suffix``, when set, is appended to it.

        Args:
            content: the system prompt.

        Returns:
            The stored entry.
        """
        if self.system_suffix:
            content = f"{content}\n\n{self.system_suffix}"
        entry = self._entry("system", content, None)
        if self._entries and self._entries[0].role == "system":
            self._total -= self._entries[0].tokens
            self._entries[0] = entry
        else:
            self._entries.insert(0, entry)
        self._total += entry.tokens
        self._repin()
        self._evict()
        return self._entries[0]

    @property
    def summary(self) -> HistoryEntry | None:
        """The entry summarising evicted ones (see ``on_evict``), if there is one."""
        return next((e for e in self._entries if e.summary), None)

    def _evict(self) -> None:
        dropped: list[HistoryEntry] = []
        while self._total > self.max_tokens or self._too_many():
            candidates = [
                i for i, e in enumerate(self._entries[:-1]) if not (e.pinned or e.summary)
            ]
            if not candidates:
                break
            index = candidates[0]
            if self.evict is not None:
                chosen = self.evict([self._entries[i] for i in candidates])
                if isinstance(chosen, bool) or not isinstance(chosen, int):
                    raise UserError(f"evict= must return an int index, not {chosen!r}")
                if not 0 <= chosen < len(candidates):
                    raise UserError(
                        f"evict= chose entry {chosen} of the {len(candidates)} that may go"
                    )
                index = candidates[chosen]
            entry = self._entries.pop(index)
            self._total -= entry.tokens
            self.evicted += 1
            dropped.append(entry)
        if dropped and self.on_evict is not None:
            text = self.on_evict(dropped)
            if text is not None:
                self._summarise(text)

    def _too_many(self) -> bool:
        if self.max_messages is None:
            return False
        kept = sum(1 for e in self._entries if not (e.pinned or e.summary))
        return kept > self.max_messages

    def _summarise(self, text: str) -> None:
        """Put ``text`` in the window as the summary, in place of the previous one."""
        previous = self.summary
        if previous is not None:
            self._entries.remove(previous)
            self._total -= previous.tokens
        entry = replace(self._entry("user", text, None), summary=True)
        at = min(self.pin_head, len(self._entries))
        self._entries.insert(at, entry)
        self._total += entry.tokens

    def messages(self) -> list[Message]:
        """The window as LLM messages, oldest first."""
        return [e.message() for e in self._entries]

    def clear(self) -> None:
        """Drop every entry, pinned ones included."""
        self._entries.clear()
        self._total = 0

    def load(self, entries: list[HistoryEntry]) -> None:
        """Replace the contents with ``entries`` as given (rebuilding a stored session).

        Args:
            entries: the entries, oldest first; their pinned flags are kept.
        """
        self._entries = list(entries)
        self._total = sum(e.tokens for e in self._entries)
