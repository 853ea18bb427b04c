"""One configuration object for all of trails.

Every setting is read in the same order: the environment (``TRAILS_*``), then
``trails.toml`` (found in the working directory, or named by ``TRAILS_CONFIG``),
then the default. ``load_settings(environ=..., cwd=...)`` takes both explicitly
so tests never depend on the machine they run on.

``trails.toml``::

    [store]
    location = "./.trails/store"   # a path, "memory:", or http(s)://... SPARQL
    [prov]
    base_iri = "urn:trails:"
    record_content = "full"        # or "hash": record sha256 only, no values
    [agent]
    strategy = "react"
    principal = "did:local:anonymous"
    [llm]
    model = "anthropic:claude-haiku-4-5"   # the default client, as trails demo --llm
    [llm.providers]                        # who serves a ModelSpec of another provider
    ollama = "ollama:qwen3:8b@http://127.0.0.1:11434"

Other rooms keep their own sections (``[llm]``, ``[serve]``, ``[audit]`` ...)
and read them with ``settings.section(name)``. A key that no room reads (a
typo, or a setting from another version) is a warning naming it, through
``logging``; ``KNOWN_KEYS`` lists what each section may hold (a room that adds
a key adds it there).

Wiring between rooms is configuration too: ``[prov] recorder_plugins`` lists
``"module:function"`` paths that ``Recorder.from_settings`` calls with the new
recorder and the settings (``settings.plugin(path)`` imports them). By default
the list holds the evidence room's sealer (``SEALER``) unless ``[audit] seal =
false``, then its recovery of sessions a stopped process left open
(``RECOVERY``, which ``[audit] recover = false`` turns off), and, when
``[otel] endpoint`` is set (or ``[otel] export = true``, the endpoint then
coming from the standard ``OTEL_EXPORTER_OTLP_*`` variables), the span
exporter (``OTEL_EXPORTER``), and, when ``[[mcp.servers]]`` lists MCP servers, their
mount (``MCP_SERVERS``), and, when ``[controls] on_session_end = true``, the evaluation of
a session's controls as it ends (``CONTROLS``), so the recorder never imports the evidence room: data flows one way,
events -> quads -> store -> evidence -> audit, and the top level connects them.
"""

from __future__ import annotations

import importlib
import logging
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trails.errors import ConfigError

__all__ = [
    "CONTROLS",
    "DEFAULT_STORE",
    "KNOWN_KEYS",
    "MCP_SERVERS",
    "OTEL_EXPORTER",
    "RECOVERY",
    "SEALER",
    "Settings",
    "load_settings",
]

DEFAULT_STORE = "./.trails/store"

SEALER = "trails.evidence.seal:install_sealer"
"""The recorder plugin that seals each session in the same write as its end."""

OTEL_EXPORTER = "trails.otel.exporter:install"
"""The recorder plugin that sends trails' runs as OTel spans (``[otel] endpoint`` or ``export``)."""

MCP_SERVERS = "trails.mcp.mounts:install"
"""The plugin that mounts the ``[[mcp.servers]]`` of trails.toml (once per process): a
recorder plugin, also called by planners before they build their catalogue."""

CONTROLS = "trails.controls.session_end:install"
"""The recorder plugin that evaluates a session's controls as it ends (``[controls]
on_session_end = true``)."""

RECOVERY = "trails.evidence.recovery:recover_on_open"
"""The recorder plugin that ends, as interrupted, sessions a stopped process left open."""

# setting name -> (environment variable, toml section, toml key, default)
_FIELDS: dict[str, tuple[str, str, str, str]] = {
    "store": ("TRAILS_STORE", "store", "location", DEFAULT_STORE),
    "base_iri": ("TRAILS_BASE_IRI", "prov", "base_iri", "urn:trails:"),
    "record_content": ("TRAILS_RECORD_CONTENT", "prov", "record_content", "full"),
    "strategy": ("TRAILS_STRATEGY", "agent", "strategy", "react"),
    "principal": ("TRAILS_PRINCIPAL", "agent", "principal", "did:local:anonymous"),
    "llm": ("TRAILS_LLM", "llm", "model", ""),
}


# section -> the keys some room reads (None: the section's room checks its own keys)
KNOWN_KEYS: dict[str, frozenset[str] | None] = {
    "store": frozenset(
        {
            "location",
            "query_url",
            "update_url",
            "gsp_url",
            "user",
            "password",
            "token",
            "timeout",
            "retries",
            "form_post",
            "union_default_graph",
            "server_graphs",
        }
    ),
    "prov": frozenset({"base_iri", "record_content", "recorder_plugins", "masking"}),
    "agent": frozenset({"strategy", "principal"}),
    "audit": frozenset(
        {
            "domain",
            "no_cross_domain",
            "redact",
            "seal",
            "signing_key",
            "verify_key",
            "recover",
            "timestamp_url",
            "timestamp_cert",
            "log_origin",
            "witnesses",
            "witness_timeout",
        }
    ),
    "serve": frozenset(
        {
            "host",
            "port",
            "tokens",
            "access_log",
            "time_limit",
            "max_query_bytes",
            "max_results",
            "max_result_bytes",
            "processes",
            "threads",
            "max_pending",
            "snapshot_interval",
            "header_timeout",
            "worker_memory_mb",
            "log_tiles",
        }
    ),
    "memory": frozenset({"max_content_chars", "weights", "ranker"}),
    "retention": frozenset(
        {
            "content_days",
            "structure_days",
            "allow_short_structure",
            "principals",
            "planners",
            "access_log_days",
        }
    ),
    "controls": frozenset({"directory", "builtin", "on_session_end", "timeout", "by"}),
    "llm": None,
    "otel": None,
    "mcp": None,
}
_log = logging.getLogger("trails.config")
_warned: set[tuple[str, str]] = set()


def _warn_unknown(toml: Mapping[str, Any], path: Path) -> None:
    """One warning per unknown section or key (per file and process)."""
    for section, table in toml.items():
        if section not in KNOWN_KEYS:
            where = f"[{section}]"
        else:
            known = KNOWN_KEYS[section]
            if known is None or not isinstance(table, dict):
                continue
            unknown = sorted(set(table) - known)
            if not unknown:
                continue
            where = ", ".join(f"[{section}] {key}" for key in unknown)
        if (str(path), where) not in _warned:
            _warned.add((str(path), where))
            _log.warning("%s: unknown setting %s is ignored", path, where)


@dataclass(frozen=True)
class Settings:
    """Resolved settings. ``sources`` says where each value came from."""

    store: str = DEFAULT_STORE
    base_iri: str = "urn:trails:"
    record_content: str = "full"
    strategy: str = "react"
    principal: str = "did:local:anonymous"
    llm: str = ""
    config_path: Path | None = None
    sources: Mapping[str, str] = field(default_factory=dict)
    toml: Mapping[str, Any] = field(default_factory=dict)

    def section(self, name: str) -> dict[str, Any]:
        """A ``[name]`` table of trails.toml (empty when absent)."""
        value = self.toml.get(name, {})
        if not isinstance(value, dict):
            raise ConfigError(f"[{name}] in {self.config_path} must be a table")
        return dict(value)

    def recorder_plugins(self) -> list[str]:
        """``module:function`` paths a new recorder is passed to (see the module docstring).

        Raises:
            ConfigError: ``[prov] recorder_plugins`` is not a list of strings, or
                ``[controls] on_session_end`` is not true or false.
        """
        explicit = self.section("prov").get("recorder_plugins")
        if explicit is None:
            sealer = [SEALER] if self.section("audit").get("seal", True) else []
            otel = self.section("otel")
            exporter = [OTEL_EXPORTER] if otel.get("endpoint") or otel.get("export") else []
            mcp = [MCP_SERVERS] if self.section("mcp").get("servers") else []
            on_end = self.section("controls").get("on_session_end", False)
            if not isinstance(on_end, bool):
                raise ConfigError("[controls] on_session_end must be true or false")
            controls = [CONTROLS] if on_end else []
            return [*sealer, RECOVERY, *exporter, *mcp, *controls]
        if not isinstance(explicit, list) or not all(isinstance(p, str) for p in explicit):
            raise ConfigError("[prov] recorder_plugins must be a list of 'module:function' strings")
        return list(explicit)

    def plugin(self, path: str) -> Callable[..., Any]:
        """Import the function a ``module:function`` path names.

        Raises:
            ConfigError: the module or function cannot be found.
        """
        module_name, _, name = path.partition(":")
        try:
            found = getattr(importlib.import_module(module_name), name or "install")
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"cannot load the plugin {path!r}: {exc}") from exc
        if not callable(found):
            raise ConfigError(f"the plugin {path!r} is not callable")
        return found  # type: ignore[no-any-return]

    def resolve_path(self, value: str) -> Path:
        """A path setting, relative to trails.toml's folder when it came from there."""
        path = Path(value).expanduser()
        if not path.is_absolute() and self.config_path is not None:
            return self.config_path.parent / path
        return path


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc


def load_settings(
    environ: Mapping[str, str] | None = None, cwd: str | Path | None = None
) -> Settings:
    """Resolve settings from ``environ`` (default ``os.environ``) and trails.toml.

    Raises:
        ConfigError: unreadable trails.toml or an invalid value.
    """
    env = os.environ if environ is None else environ
    folder = Path(cwd) if cwd is not None else Path.cwd()
    explicit = env.get("TRAILS_CONFIG")
    config_path: Path | None = Path(explicit) if explicit else folder / "trails.toml"
    if explicit and not config_path.is_file():  # type: ignore[union-attr]
        raise ConfigError(f"TRAILS_CONFIG names {explicit}, which is not a file")
    toml: dict[str, Any] = {}
    if config_path is not None and config_path.is_file():
        toml = _read_toml(config_path)
        _warn_unknown(toml, config_path)
    else:
        config_path = None

    values: dict[str, str] = {}
    sources: dict[str, str] = {}
    for name, (var, section, key, default) in _FIELDS.items():
        table = toml.get(section, {})
        if var in env and env[var] != "":
            values[name], sources[name] = env[var], f"environment {var}"
        elif isinstance(table, dict) and key in table:
            values[name], sources[name] = str(table[key]), f"{config_path} [{section}] {key}"
        else:
            values[name], sources[name] = default, "default"

    if values["record_content"] not in ("full", "hash"):
        raise ConfigError(
            f"record_content must be 'full' or 'hash', not {values['record_content']!r} "
            f"(from {sources['record_content']})"
        )
    if not values["base_iri"] or ":" not in values["base_iri"]:
        raise ConfigError(f"base_iri must be an absolute IRI prefix, not {values['base_iri']!r}")
    return Settings(**values, config_path=config_path, sources=sources, toml=toml)
