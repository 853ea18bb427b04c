"""Tool policies you configure rather than code, and the human review they can ask for.

``ToolPolicy`` (in ``trails.kernel.decision``) is the protocol: anything with a
``name`` and ``decide(spec, args, ctx) -> Decision``. This module adds the
built-in one, ``RulePolicy``: glob lists of capability ids to ``allow``,
send to ``review`` and ``deny``, plus ``deny_when`` conditions on arguments.
Rules are evaluated deny -> review -> allow; a capability no rule names goes to
review (fail safe: nobody approved it in advance). ``RulePolicy.from_settings``
reads ``[policy]`` of trails.toml, which applies to every session that sets no
policy of its own.

A ``review`` verdict asks the context's approver: a function called with the
capability, the arguments and the policy's reason, sync or async, returning a
bool or an ``Approval`` (which can name the reviewer). ``review_call`` runs it,
and denies the call when no approver is set, when it raises, or when it has not
answered within ``approval_timeout_s``. ``invoke`` records the outcome as a
``trails:PolicyDecision``.
"""

from __future__ import annotations

import contextvars
import fnmatch
import inspect
import logging
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from trails.errors import ConfigError, UserError
from trails.kernel.decision import Decision

if TYPE_CHECKING:
    from trails.config import Settings
    from trails.kernel.registry import CapabilitySpec

__all__ = [
    "Approval",
    "Approver",
    "DenyWhen",
    "Review",
    "ReviewOutcome",
    "RulePolicy",
    "review_call",
    "settings_timeout",
]

log = logging.getLogger(__name__)

Approver = Callable[..., "bool | Approval | Awaitable[bool | Approval]"]
"""``approver(spec, args, reason)`` -> bool or ``Approval`` (or an awaitable of one).

An approver written for the older two-argument form ``approver(spec, args)`` is
still called that way."""

ReviewOutcome = Literal["approved", "refused", "timed_out", "no_approver"]


@dataclass(frozen=True)
class Approval:
    """An approver's answer when it wants to say who reviewed and why.

    Attributes:
        approved: whether the call may run.
        reviewer: who decided (a DID, an e-mail, a user id); recorded as the
            ``prov:Agent`` the decision was associated with.
        note: the reviewer's own reason, recorded with the decision.
    """

    approved: bool
    reviewer: str | None = None
    note: str = ""


@dataclass(frozen=True)
class Review:
    """What came of asking for review: the outcome, who reviewed, and their note."""

    outcome: ReviewOutcome
    reviewer: str | None = None
    note: str = ""

    @property
    def approved(self) -> bool:
        return self.outcome == "approved"


@dataclass(frozen=True)
class DenyWhen:
    """Deny calls of ``tool`` (a glob) whose argument ``arg`` matches ``pattern`` (a glob).

    The argument is compared as text (``str(value)``), case-sensitively.
    """

    tool: str
    arg: str
    pattern: str

    @classmethod
    def of(cls, value: DenyWhen | Mapping[str, Any]) -> DenyWhen:
        """A condition from itself or from ``{"tool": ..., "arg": ..., "pattern": ...}``.

        Raises:
            UserError: a mapping without those three string keys.
        """
        if isinstance(value, DenyWhen):
            return value
        if isinstance(value, Mapping):
            parts = [value.get(k) for k in ("tool", "arg", "pattern")]
            if all(isinstance(p, str) and p for p in parts):
                return cls(*parts)  # type: ignore[arg-type]
        raise UserError(
            f"a deny_when condition needs string keys tool, arg and pattern, not {value!r}"
        )

    def matches(self, capability_id: str, args: Mapping[str, Any]) -> bool:
        if not fnmatch.fnmatchcase(capability_id, self.tool) or self.arg not in args:
            return False
        return fnmatch.fnmatchcase(str(args[self.arg]), self.pattern)


def _globs(name: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise UserError(f"RulePolicy {name}= must be a list of glob strings, not {value!r}")
    if not all(isinstance(v, str) and v for v in value):
        raise UserError(f"RulePolicy {name}= must hold non-empty glob strings, not {value!r}")
    return tuple(value)


@dataclass(frozen=True, init=False)
class RulePolicy:
    """Allow / review / deny capability ids by glob, deny by argument; deny -> review -> allow.

    Args:
        allow: globs of capability ids that run without review (``"search.*"``).
        review: globs of ids that need an approver's yes.
        deny: globs of ids that never run.
        deny_when: conditions on arguments (``DenyWhen`` or mappings with
            ``tool``, ``arg``, ``pattern``); a match denies the call.
        unknown: the verdict for an id no rule names (default ``"review"``).
        name: the policy's name, which names its ``prov:Agent`` in the record.

    Raises:
        UserError: a list that is not a list of globs, or a bad ``unknown``.

    Example::

        policy = RulePolicy(allow=["search_*"], review=["send_*"], deny=["delete_*"],
                            deny_when=[{"tool": "send_email", "arg": "to",
                                        "pattern": "*@external.com"}])
    """

    allow: tuple[str, ...]
    review: tuple[str, ...]
    deny: tuple[str, ...]
    deny_when: tuple[DenyWhen, ...]
    unknown: Literal["allow", "review", "deny"]
    name: str = field(default="rules")

    def __init__(
        self,
        *,
        allow: Sequence[str] | None = None,
        review: Sequence[str] | None = None,
        deny: Sequence[str] | None = None,
        deny_when: Sequence[DenyWhen | Mapping[str, Any]] | None = None,
        unknown: Literal["allow", "review", "deny"] = "review",
        name: str = "rules",
    ) -> None:
        if unknown not in ("allow", "review", "deny"):
            raise UserError(f"RulePolicy unknown= must be allow, review or deny, not {unknown!r}")
        if not isinstance(name, str) or not name.strip():
            raise UserError(f"RulePolicy name= must be a non-empty str, not {name!r}")
        if deny_when is not None and (isinstance(deny_when, str | Mapping)):
            raise UserError(
                f"RulePolicy deny_when= must be a list of conditions, not {deny_when!r}"
            )
        object.__setattr__(self, "allow", _globs("allow", allow))
        object.__setattr__(self, "review", _globs("review", review))
        object.__setattr__(self, "deny", _globs("deny", deny))
        object.__setattr__(self, "deny_when", tuple(DenyWhen.of(c) for c in deny_when or ()))
        object.__setattr__(self, "unknown", unknown)
        object.__setattr__(self, "name", name)

    def decide(self, spec: CapabilitySpec, args: dict[str, Any], ctx: Any) -> Decision:
        """The verdict on one call, with the rule that matched.

        ``ctx`` (the calling ``Context``) plays no part: the rules read only the
        capability id and the arguments. It is typed ``Any`` as in ``ToolPolicy``,
        since ``trails.kernel.context`` imports this module.
        """
        cid = spec.id
        for glob in self.deny:
            if fnmatch.fnmatchcase(cid, glob):
                return Decision("deny", f"{cid} matches deny rule {glob!r}", rule=f"deny:{glob}")
        for cond in self.deny_when:
            if cond.matches(cid, args):
                rule = f"deny_when:{cond.tool}:{cond.arg}={cond.pattern}"
                reason = f"{cid} argument {cond.arg!r} matches {cond.pattern!r}"
                return Decision("deny", reason, rule=rule)
        for glob in self.review:
            if fnmatch.fnmatchcase(cid, glob):
                reason = f"{cid} matches review rule {glob!r}"
                return Decision("review", reason, rule=f"review:{glob}")
        for glob in self.allow:
            if fnmatch.fnmatchcase(cid, glob):
                return Decision("allow", f"{cid} matches allow rule {glob!r}", rule=f"allow:{glob}")
        return Decision(self.unknown, f"no rule names {cid}", rule="unknown")

    @classmethod
    def from_settings(cls, settings: Settings) -> RulePolicy | None:
        """The ``[policy]`` table of trails.toml as a policy, or None when there is none.

        Keys: ``allow``, ``review``, ``deny`` (lists of globs), ``deny_when`` (a
        list of tables with ``tool``, ``arg``, ``pattern``), ``unknown`` and ``name``.

        Raises:
            ConfigError: an unknown key or a bad value.
        """
        table = settings.section("policy")
        if not table:
            return None
        known = {"allow", "review", "deny", "deny_when", "unknown", "name", "approval_timeout_s"}
        extra = sorted(set(table) - known)
        if extra:
            raise ConfigError(
                f"[policy] in {settings.config_path} has unknown keys: {', '.join(extra)}"
            )
        try:
            return cls(
                allow=table.get("allow"),
                review=table.get("review"),
                deny=table.get("deny"),
                deny_when=table.get("deny_when"),
                unknown=table.get("unknown", "review"),
                name=table.get("name", "trails.toml"),
            )
        except UserError as exc:
            raise ConfigError(f"[policy] in {settings.config_path}: {exc}") from exc


def settings_timeout(settings: Settings) -> float | None:
    """``[policy] approval_timeout_s`` of trails.toml, or None.

    Raises:
        ConfigError: not a positive number.
    """
    value = settings.section("policy").get("approval_timeout_s")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigError(f"[policy] approval_timeout_s must be a positive number, not {value!r}")
    return float(value)


def _arity(approver: Callable[..., Any]) -> int:
    try:
        params = inspect.signature(approver).parameters.values()
    except (TypeError, ValueError):
        return 3
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return 3
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return 2 if len(positional) == 2 else 3


def _reviewer_of(approver: Callable[..., Any]) -> str:
    named = getattr(approver, "reviewer", None) or getattr(approver, "name", None)
    if isinstance(named, str) and named.strip():
        return named
    qualname = getattr(approver, "__qualname__", type(approver).__qualname__)
    return f"approver:{getattr(approver, '__module__', '')}.{qualname}"


def review_call(
    approver: Approver | None,
    spec: CapabilitySpec,
    args: dict[str, Any],
    reason: str,
    timeout_s: float | None,
) -> Review:
    """Ask ``approver`` about one call; fail closed.

    The approver runs on a worker thread (so an async approver works inside or
    outside an event loop, and a slow one can be given up on). No approver, an
    approver that raises, or no answer within ``timeout_s`` all mean no.

    Returns:
        The ``Review``: outcome, reviewer and the reviewer's note.
    """
    if approver is None:
        return Review("no_approver", None, "no approver is set")
    default_reviewer = _reviewer_of(approver)
    call_args = (spec, args) if _arity(approver) == 2 else (spec, args, reason)
    answer: list[Any] = []
    done = threading.Event()

    def ask() -> None:
        try:
            result = approver(*call_args)
            if inspect.isawaitable(result):
                import asyncio  # imported when first used: `import trails` does not load asyncio

                result = asyncio.run(_awaited(result))
            answer.append(result)
        except BaseException as exc:  # reported as a refusal
            answer.append(exc)
        finally:
            done.set()

    context = contextvars.copy_context()
    worker = threading.Thread(target=context.run, args=(ask,), daemon=True, name="trails-review")
    worker.start()
    if not done.wait(timeout_s):
        return Review("timed_out", default_reviewer, f"timed out: no answer within {timeout_s:g} s")
    result = answer[0]
    if isinstance(result, BaseException):
        log.warning("the approver of %s raised; the call is denied", spec.id, exc_info=result)
        note = f"the approver raised {type(result).__name__}: {result}"
        return Review("refused", default_reviewer, note)
    if isinstance(result, Approval):
        outcome: ReviewOutcome = "approved" if result.approved else "refused"
        return Review(outcome, result.reviewer or default_reviewer, result.note)
    return Review("approved" if result is True else "refused", default_reviewer, "")


async def _awaited(value: Awaitable[Any]) -> Any:
    return await value
