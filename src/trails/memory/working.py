"""Working memory: a per-run key-value scratchpad planners share between steps.

A behaviour tree or plan run keeps observations here while it works ("the
config file is at ...", "step 3 failed with ..."). It is ephemeral by design:
nothing is written to the store; what should outlive the run is learned into
long-term memory, or kept as an episode (``trails.memory.episodic``).

It is thread-safe (parallel branches write to it), and ``snapshot()`` gives
a deep copy that later writes cannot change, for prompts, debugging and
``restore()`` after a failed branch.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

from trails.errors import MemoryInputError

__all__ = ["WorkingMemory"]

_MISSING = object()


class WorkingMemory:
    """A thread-safe key-value scratchpad for one run.

    Args:
        initial: entries to start with (copied).
    """

    def __init__(self, initial: Mapping[str, Any] | None = None) -> None:
        self._lock = threading.RLock()
        self._data: dict[str, Any] = {}
        if initial:
            for key, value in initial.items():
                self.set(key, value)

    @staticmethod
    def _key(key: object) -> str:
        if not isinstance(key, str) or not key:
            raise MemoryInputError(f"working memory keys are non-empty strings, not {key!r}")
        return key

    def set(self, key: str, value: Any) -> None:
        """Store ``value`` under ``key`` (replacing any previous value).

        Raises:
            MemoryInputError: the key is not a non-empty string.
        """
        key = self._key(key)
        with self._lock:
            self._data[key] = value

    def get(self, key: str, default: Any = None) -> Any:
        """The value under ``key``, or ``default``."""
        with self._lock:
            return self._data.get(key, default)

    def setdefault(self, key: str, value: Any) -> Any:
        """The value under ``key``; stores and returns ``value`` when absent (atomically)."""
        key = self._key(key)
        with self._lock:
            return self._data.setdefault(key, value)

    def update(self, values: Mapping[str, Any]) -> None:
        """Store several entries at once (all or none when a key is invalid).

        Raises:
            MemoryInputError: a key is not a non-empty string.
        """
        checked = {self._key(k): v for k, v in values.items()}
        with self._lock:
            self._data.update(checked)

    def delete(self, key: str) -> bool:
        """Remove ``key``; True when it was there."""
        with self._lock:
            return self._data.pop(key, _MISSING) is not _MISSING

    def append(self, key: str, value: Any) -> list[Any]:
        """Append to the list under ``key`` (created when absent); returns a copy of it.

        Raises:
            MemoryInputError: the value under ``key`` is not a list.
        """
        key = self._key(key)
        with self._lock:
            current = self._data.setdefault(key, [])
            if not isinstance(current, list):
                raise MemoryInputError(
                    f"working memory {key!r} holds a {type(current).__name__}, not a list"
                )
            current.append(value)
            return list(current)

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._data.clear()

    def snapshot(self) -> Mapping[str, Any]:
        """A deep, read-only copy of the current entries; later writes do not change it."""
        with self._lock:
            return MappingProxyType(copy.deepcopy(self._data))

    def restore(self, snapshot: Mapping[str, Any]) -> None:
        """Replace every entry with those of ``snapshot`` (a deep copy of it)."""
        data = copy.deepcopy(dict(snapshot))
        for key in data:
            self._key(key)
        with self._lock:
            self._data = data

    def render(self, limit: int = 4000) -> str:
        """The entries as ``key: value`` lines for a prompt, cut at ``limit`` characters."""
        with self._lock:
            lines = [f"{k}: {v}" for k, v in self._data.items()]
        text = "\n".join(lines)
        return text if len(text) <= limit else text[: max(limit - 3, 0)] + "..."

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._data

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)

    def __iter__(self) -> Iterator[str]:
        with self._lock:
            return iter(list(self._data))

    def __repr__(self) -> str:
        return f"WorkingMemory({len(self)} entries)"
