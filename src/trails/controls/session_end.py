"""Controls evaluated as each session ends, on the recording process (a recorder plugin).

With ``[controls] on_session_end = true`` in trails.toml, ``Recorder.from_settings``
installs ``install`` (``trails.config.CONTROLS``): after a ``SessionEnded`` is written
(a native run's end, a session assembled from OTLP spans), the
session-scoped controls are evaluated over that session's graphs and recorded as sealed
evidence in one more write. The cost is that of the controls' queries over one session's
graphs: O(session), whatever the store holds. The controls are read once, when the
recorder is made: ``[controls] directory`` (relative to trails.toml) and, unless
``builtin = false``, the built-in set. A bad control file refuses the recorder
(``ConfigError``), so nothing records under controls that cannot run. A failed evaluation
never costs the session: the session is already written and sealed when it runs.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from trails.config import Settings
from trails.controls.evaluate import DEFAULT_TIMEOUT_S, evaluate_session
from trails.controls.model import Control, builtin_controls, load_controls
from trails.errors import ConfigError, ControlError

if TYPE_CHECKING:
    from trails.prov.events import Event

__all__ = ["configured_controls", "install"]

log = logging.getLogger(__name__)


def configured_controls(settings: Settings, *, builtin: bool | None = None) -> list[Control]:
    """The controls ``[controls]`` names: ``directory``'s and (unless ``builtin = false``,
    or ``builtin=False`` here) the built-in set; a control of the directory replaces a
    built-in one of the same id.

    Raises:
        ControlError: a control file is refused.
        ConfigError: ``[controls]`` holds a value of the wrong type.
    """
    section = settings.section("controls")
    if builtin is None:
        builtin = section.get("builtin", True)
    directory = section.get("directory")
    if not isinstance(builtin, bool):
        raise ConfigError("[controls] builtin must be true or false")
    if directory is not None and not isinstance(directory, str):
        raise ConfigError("[controls] directory must be a path")
    found: dict[str, Control] = {}
    if builtin:
        found.update((c.id, c) for c in builtin_controls())
    if directory:
        found.update((c.id, c) for c in load_controls(settings.resolve_path(directory)))
    return [found[k] for k in sorted(found)]


def install(recorder: Any, settings: Settings) -> None:
    """Evaluate the session-scoped controls as each session this recorder ends.

    Raises:
        ConfigError: a control file is refused, or ``[controls]`` is malformed.
    """
    section = settings.section("controls")
    try:
        controls = [c for c in configured_controls(settings) if c.scope == "session"]
    except ControlError as exc:
        raise ConfigError(f"[controls]: {exc}") from exc
    timeout = section.get("timeout", DEFAULT_TIMEOUT_S)
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
        raise ConfigError("[controls] timeout must be a positive number of seconds")
    by = section.get("by", settings.principal)
    if not isinstance(by, str) or not by.strip():
        raise ConfigError("[controls] by must be an agent's identifier (a principal's DID)")
    if not controls:
        return
    # loaded by a recorder that evaluates: ``configured_controls`` (``trails controls list``)
    # does not build the event models
    from trails.controls.record import record_evaluation
    from trails.prov.events import SessionEnded

    def ended(rec: Any, event: Event) -> None:
        if not isinstance(event, SessionEnded):
            return
        evaluation = evaluate_session(rec.store, event.session, controls, timeout=float(timeout))
        record_evaluation(rec, evaluation, by=by)

    recorder.subscribe(ended)
