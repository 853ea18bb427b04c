"""The model catalogue: what each model costs and is good for, and how to pick one.

The data lives in ``models.toml`` next to this module (shipped in the wheel),
so prices change without a code change; ``Catalogue.load(path)`` reads another
file with the same shape. Prices are USD per million tokens for uncached
input, output, cache reads and cache writes. Local providers (Ollama, the
mock, an OpenAI-compatible server on this machine) cost 0. A model that is
neither listed nor local has an unknown price: ``Catalogue.price`` returns
None and the completion records its tokens without ``usd``. trails never
invents a price.
"""

from __future__ import annotations

import re
import threading
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from trails.errors import ConfigError, UserError

__all__ = ["BUDGET_HINTS", "Catalogue", "ModelSpec", "default_catalogue", "select_model"]

BUDGET_HINTS = ("cheap", "balanced", "best", "local")
_DATED = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2})$")


@dataclass(frozen=True)
class ModelSpec:
    """One model: who serves it, how much context it takes, what a million tokens cost.

    Prices are None when unknown (never guessed); a local model has all prices 0.
    """

    provider: str
    model: str
    context_window: int | None = None
    input_per_mtok: float | None = None
    output_per_mtok: float | None = None
    cache_read_per_mtok: float | None = None
    cache_write_per_mtok: float | None = None
    local: bool = False
    quality: int = 0
    tasks: tuple[str, ...] = field(default=())

    @property
    def spec(self) -> str:
        """The ``provider:model`` form ``LLMClient.from_spec`` accepts."""
        return f"{self.provider}:{self.model}"

    @property
    def priced(self) -> bool:
        return self.input_per_mtok is not None and self.output_per_mtok is not None

    def cost(
        self,
        input_tokens: int,
        output_tokens: int,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
    ) -> float | None:
        """USD for one call, or None when the price is unknown.

        ``input_tokens`` are the uncached prompt tokens (as the providers
        report them); cache reads and writes are priced separately, at the
        input price when the catalogue gives no cache price.

        Args:
            input_tokens: uncached prompt tokens.
            output_tokens: completion tokens.
            cache_read_tokens: prompt tokens read from the provider cache.
            cache_write_tokens: prompt tokens written to the provider cache.

        Returns:
            The cost in USD, or None.
        """
        if self.local:
            return 0.0
        if self.input_per_mtok is None or self.output_per_mtok is None:
            return None
        read = (
            self.cache_read_per_mtok
            if self.cache_read_per_mtok is not None
            else self.input_per_mtok
        )
        write = (
            self.cache_write_per_mtok
            if self.cache_write_per_mtok is not None
            else self.input_per_mtok
        )
        total = (
            input_tokens * self.input_per_mtok
            + output_tokens * self.output_per_mtok
            + cache_read_tokens * read
            + cache_write_tokens * write
        )
        return total / 1_000_000

    def blended_per_mtok(self) -> float:
        """A single price for ranking: 3 input tokens per output token (0 local, inf unknown)."""
        if self.local:
            return 0.0
        if self.input_per_mtok is None or self.output_per_mtok is None:
            return float("inf")
        return (3 * self.input_per_mtok + self.output_per_mtok) / 4


def _opt_float(entry: dict[str, Any], key: str, where: str) -> float | None:
    value = entry.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ConfigError(f"{where}: {key} must be a non-negative number, not {value!r}")
    return float(value)


class Catalogue:
    """Model specs by ``(provider, model)``, plus which providers are local.

    Args:
        models: the specs.
        local_providers: providers whose models all cost 0.
    """

    def __init__(self, models: list[ModelSpec], local_providers: set[str] | None = None) -> None:
        self._models = {(m.provider, m.model): m for m in models}
        self.local_providers = frozenset(local_providers or ())

    @classmethod
    def load(cls, path: str | Path | None = None) -> Catalogue:
        """Read a catalogue file (default: the ``models.toml`` shipped with trails).

        Args:
            path: a TOML file with ``[providers.*]`` tables and ``[[model]]`` entries.

        Returns:
            The catalogue.

        Raises:
            ConfigError: the file cannot be read or an entry is invalid.
        """
        where = str(path) if path is not None else "trails/llm/models.toml"
        try:
            if path is None:
                text = resources.files("trails.llm").joinpath("models.toml").read_text("utf-8")
            else:
                text = Path(path).read_text("utf-8")
            data = tomllib.loads(text)
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read the model catalogue {where}: {exc}") from exc
        providers = data.get("providers", {})
        local = {name for name, table in providers.items() if table.get("local")}
        models: list[ModelSpec] = []
        for i, entry in enumerate(data.get("model", [])):
            here = f"{where} model #{i + 1}"
            provider, model = entry.get("provider"), entry.get("id")
            if not isinstance(provider, str) or not isinstance(model, str):
                raise ConfigError(f"{here}: 'provider' and 'id' must be strings")
            is_local = bool(entry.get("local", provider in local))
            tasks = entry.get("tasks", [])
            if not isinstance(tasks, list) or not all(isinstance(t, str) for t in tasks):
                raise ConfigError(f"{here}: 'tasks' must be a list of strings")
            models.append(
                ModelSpec(
                    provider=provider,
                    model=model,
                    context_window=entry.get("context_window"),
                    input_per_mtok=0.0 if is_local else _opt_float(entry, "input", here),
                    output_per_mtok=0.0 if is_local else _opt_float(entry, "output", here),
                    cache_read_per_mtok=0.0 if is_local else _opt_float(entry, "cache_read", here),
                    cache_write_per_mtok=0.0
                    if is_local
                    else _opt_float(entry, "cache_write", here),
                    local=is_local,
                    quality=int(entry.get("quality", 0)),
                    tasks=tuple(tasks),
                )
            )
        return cls(models, local)

    def __iter__(self) -> Iterator[ModelSpec]:
        return iter(self._models.values())

    def __len__(self) -> int:
        return len(self._models)

    def get(self, provider: str, model: str) -> ModelSpec | None:
        """The listed spec, or None."""
        return self._models.get((provider, model))

    def find(self, provider: str, model: str) -> ModelSpec | None:
        """The listed spec, also for a dated id (``claude-sonnet-4-5-20250929``) of a listed model."""
        listed = self._models.get((provider, model))
        if listed is None:
            undated = _DATED.sub("", model)
            if undated != model:
                listed = self._models.get((provider, undated))
        return listed

    def spec_for(self, provider: str, model: str, *, local: bool = False) -> ModelSpec:
        """The listed spec, else a local spec (price 0) or an unpriced one (price None).

        Args:
            provider: the adapter's provider name.
            model: the model id.
            local: the adapter talks to this machine (its models cost 0).

        Returns:
            A spec; never a made-up price.
        """
        listed = self.find(provider, model)
        if listed is not None:
            return listed
        if local or provider in self.local_providers:
            return ModelSpec(provider, model, 0, 0.0, 0.0, 0.0, 0.0, local=True)
        return ModelSpec(provider, model)

    def select(
        self,
        task: str,
        *,
        budget_hint: str | float = "balanced",
        provider: str | None = None,
    ) -> ModelSpec:
        """Pick a model for ``task``; see ``select_model``."""
        pool = [m for m in self if provider is None or m.provider == provider]
        pool = [m for m in pool if m.provider != "mock"] or pool
        if not pool:
            raise UserError(f"no model in the catalogue for provider {provider!r}")
        fit = [m for m in pool if task in m.tasks] or pool
        if isinstance(budget_hint, bool) or not isinstance(budget_hint, str | int | float):
            raise UserError(f"budget_hint must be one of {BUDGET_HINTS} or a number")
        if isinstance(budget_hint, int | float):
            limit = float(budget_hint)
            within = [m for m in fit if m.blended_per_mtok() <= limit]
            if not within:
                raise UserError(
                    f"no model for task {task!r} costs at most ${limit}/Mtok (blended); "
                    f"the cheapest is {min(fit, key=lambda m: m.blended_per_mtok()).spec}"
                )
            return max(within, key=lambda m: (m.quality, -m.blended_per_mtok(), m.spec))
        if budget_hint == "cheap":
            priced = [m for m in fit if m.priced or m.local]
            return min(priced or fit, key=lambda m: (m.blended_per_mtok(), -m.quality, m.spec))
        if budget_hint == "best":
            return max(fit, key=lambda m: (m.quality, -m.blended_per_mtok(), m.spec))
        if budget_hint == "local":
            local = [m for m in fit if m.local] or [m for m in pool if m.local]
            if not local:
                raise UserError(f"no local model in the catalogue for task {task!r}")
            return max(local, key=lambda m: (m.quality, m.spec))
        if budget_hint == "balanced":
            ranked = sorted(fit, key=lambda m: (m.quality, -m.blended_per_mtok(), m.spec))
            return ranked[(len(ranked) - 1) // 2 + (1 if len(ranked) > 2 else 0)]
        raise UserError(
            f"unknown budget_hint {budget_hint!r}: use one of {BUDGET_HINTS} or a number"
        )


_lock = threading.Lock()
_default: Catalogue | None = None


def default_catalogue() -> Catalogue:
    """The shipped catalogue, loaded once."""
    global _default
    with _lock:
        if _default is None:
            _default = Catalogue.load()
        return _default


def select_model(
    task: str,
    *,
    budget_hint: str | float = "balanced",
    provider: str | None = None,
    catalogue: Catalogue | None = None,
) -> ModelSpec:
    """Choose a model for a task, the way a planner compares capabilities by cost.

    Models whose ``tasks`` include ``task`` are preferred (all models when none
    does). ``budget_hint`` then picks: ``"cheap"`` the lowest blended price,
    ``"best"`` the highest quality, ``"local"`` the best local model,
    ``"balanced"`` (default) the upper middle of the quality ranking, and a
    number the best model whose blended price (3:1 input:output, USD per
    million tokens) is at most that number.

    Args:
        task: what the model is for (``"summarize"``, ``"plan"``, ``"code"`` ...).
        budget_hint: ``"cheap" | "balanced" | "best" | "local"`` or a price ceiling.
        provider: only consider this provider's models.
        catalogue: the catalogue to choose from (default: the shipped one).

    Returns:
        The chosen ``ModelSpec``; pass it as ``model=`` to ``LLMClient.complete``
        or its ``.spec`` to ``LLMClient.from_spec``.

    Raises:
        UserError: an unknown hint, or nothing fits.
    """
    return (catalogue if catalogue is not None else default_catalogue()).select(
        task, budget_hint=budget_hint, provider=provider
    )
