"""A session as a conversation: its goal, what each completion was asked and answered, and
what each call was given and returned, in the order they happened (``trails logs``).

The report shows a session for an auditor; this is the view a developer reaches for
first (as ``llm logs`` shows prompts and answers): plain text fitted to the terminal,
or JSON. It reads three pack queries (``session-overview``, ``session-timeline``,
``session-io``) and the error message each failed activity recorded (in the session's
content graph): nothing a regulator could not ask for the same way.
"""

from __future__ import annotations

import hashlib
import json
import textwrap
from dataclasses import asdict, dataclass, field

from trails.audit.export import Redaction
from trails.audit.querypack import get_query
from trails.catalogue.entries import session_outcome
from trails.errors import SessionError
from trails.prov.content import content_graph
from trails.prov.vocab import T
from trails.store.base import Solutions, Store, select
from trails.store.terms import IRI, Literal, Term, instant

__all__ = ["Entry", "Log", "conversation", "render_json", "render_text"]

_KINDS = {
    "LLMCompletion": "completion",
    "CapabilityInvocation": "call",
    "PlanRun": "run",
}
_ROLES = {
    "Prompt": "prompt",
    "Completion": "answer",
    "CapabilityInput": "input",
    "CapabilityOutput": "output",
}


@dataclass
class Entry:
    """One completion, call or run of the session, with what it used and produced."""

    kind: str
    label: str
    started: str
    status: str
    activity: str
    values: dict[str, str] = field(default_factory=dict)


@dataclass
class Log:
    """A session as a conversation; ``outcome`` and ``reason`` as every listing says them
    (``failed`` for a session that ended ``ok`` while its run failed), ``status`` how the
    session itself ended."""

    session: str
    principal: str
    started: str
    status: str
    goals: list[str]
    answers: list[str]
    entries: list[Entry]
    outcome: str = ""
    reason: str = ""


def _text(term: Term | None) -> str:
    if term is None:
        return ""
    return term.value if isinstance(term, Literal) else str(term)


def _rows(store: Store, name: str, session: IRI) -> list[dict[str, str]]:
    result = get_query(name).run(store, session=session)
    assert isinstance(result, Solutions)
    return [
        {n: _text(v) for n, v in zip(result.variables, row, strict=True)} for row in result.rows
    ]


_ERRORS = f"""SELECT ?activity ?error $session $content WHERE {{
  GRAPH $session {{ ?activity {T.inSession.n3()} $session }}
  {{ GRAPH $content {{ ?activity {T.errorMessage.n3()} ?error }} }}
  UNION {{ GRAPH $session {{ ?activity {T.errorMessage.n3()} ?error }} }}
}}"""
# what the kind of an entry is called at the start of its label (``completion by MODEL``,
# ``invoke CAPABILITY``): the heading names the kind once
_LABEL_KIND = {"completion": "completion ", "call": "invoke "}


def _errors(store: Store, session: IRI) -> dict[str, str]:
    """The recorded error message of each failed activity of ``session`` (content; an
    erased one is absent)."""
    found = select(store, _ERRORS, {"session": session, "content": content_graph(session)})
    return {_text(row[0]): _text(row[1]) for row in found.rows if row[1] is not None}


def _local(iri: str) -> str:
    return iri.rsplit("#", 1)[-1].rsplit("/", 1)[-1]


def conversation(store: Store, session: IRI, *, redaction: Redaction | None = None) -> Log:
    """The session ``session`` as a conversation.

    Args:
        store: the store.
        session: the session's IRI.
        redaction: the export's rules hiding recorded values (None: values are shown).

    Raises:
        SessionError: there is no such session in the store.
    """
    overview = _rows(store, "session-overview", session)
    if not overview:
        raise SessionError(f"no session {session} in this store (trails sessions lists them)")
    head = overview[0]
    runs = sorted((r for r in overview if r.get("run")), key=lambda r: r.get("runStarted", ""))
    goals = list(dict.fromkeys(r["goal"] for r in runs if r.get("goal")))
    answers = list(dict.fromkeys(r["answer"] for r in runs if r.get("answer")))
    hidden = redaction.hidden(store, session) if redaction is not None else {}
    values: dict[str, dict[str, str]] = {}
    for r in _rows(store, "session-io", session):
        role = _ROLES.get(_local(r.get("type", "")))
        if role is None or not r.get("value"):
            continue
        action = hidden.get(IRI.trusted(r["entity"]))
        value = r["value"]
        if action == "drop":
            value = "[redacted]"
        elif action == "hash":
            value = "sha256:" + hashlib.sha256(value.encode("utf-8")).hexdigest()
        values.setdefault(r["activity"], {}).setdefault(role, value)
    for activity, error in _errors(store, session).items():
        values.setdefault(activity, {}).setdefault("error", error)
    entries: dict[str, Entry] = {}
    for r in _rows(store, "session-timeline", session):
        kind = _KINDS.get(_local(r.get("type", "")))
        if kind is None or r["activity"] in entries:
            continue
        entries[r["activity"]] = Entry(
            kind=kind,
            label=r.get("label", ""),
            started=r.get("started", ""),
            status=r.get("status", ""),
            activity=r["activity"],
            values=values.get(r["activity"], {}),
        )
    ordered = sorted(entries.values(), key=lambda e: (instant(e.started), e.activity))
    outcome, reason = session_outcome(store, session)
    return Log(
        session=str(session),
        principal=head.get("principal", ""),
        started=head.get("started", ""),
        status=head.get("status", "") or "open",
        goals=goals,
        answers=answers,
        entries=[e for e in ordered if e.kind != "run"],
        outcome=outcome,
        reason=reason,
    )


def render_json(logs: list[Log]) -> str:
    """The logs as a JSON array (one object per session)."""
    return json.dumps([asdict(log) for log in logs], indent=2, ensure_ascii=False)


def _last_message(value: str) -> str:
    """What a prompt asked last: its last message (``role: content``) when it is a recorded
    request (``{"messages": [...]}``), else the prompt itself."""
    try:
        request = json.loads(value)
    except ValueError:
        return value
    messages = request.get("messages") if isinstance(request, dict) else None
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        return value
    last = messages[-1]
    content = last.get("content")
    if not isinstance(content, str):
        content = json.dumps(content, ensure_ascii=False)
    earlier = f"[{len(messages) - 1} earlier message(s)]\n" if len(messages) > 1 else ""
    return f"{earlier}{last.get('role', 'user')}: {content}"


def _tail(value: str, lines: int) -> str:
    """The last ``lines`` lines of what a prompt asked last, marked when cut."""
    kept = _last_message(value).rstrip().splitlines()
    if len(kept) <= lines:
        return "\n".join(kept)
    return "…\n" + "\n".join(kept[-lines:])


def _block(name: str, value: str, width: int, indent: str = "    ") -> list[str]:
    out = [f"  {name}:"]
    for line in value.splitlines() or [""]:
        wrapped = textwrap.wrap(
            line, width=max(20, width - len(indent)), replace_whitespace=False
        ) or [""]
        out.extend(indent + w for w in wrapped)
    return out


def render_text(logs: list[Log], *, width: int = 100, prompt_lines: int = 6) -> str:
    """The logs as text fitted to ``width`` columns, a prompt shown by its last lines."""
    out: list[str] = []
    for log in logs:
        title = f"# {log.session}  {log.outcome or log.status}  {log.principal}  {log.started}"
        out.append(title if len(title) <= width else title[: width - 1] + "…")
        if log.reason and log.outcome != "ok":
            out.extend(_block("outcome", f"{log.outcome}: {log.reason}", width))
        for goal in log.goals:
            out.extend(_block("goal", goal, width))
        for entry in log.entries:
            status = f" [{entry.status}]" if entry.status and entry.status != "ok" else ""
            label = entry.label.removeprefix(_LABEL_KIND.get(entry.kind, ""))
            out.append(f"## {entry.kind} {label}{status}  {entry.started}")
            if "error" in entry.values:
                out.extend(_block("error", entry.values["error"], width))
            if entry.kind == "completion":
                if "prompt" in entry.values:
                    out.extend(_block("prompt", _tail(entry.values["prompt"], prompt_lines), width))
                if "answer" in entry.values:
                    out.extend(_block("answer", entry.values["answer"], width))
            else:
                for role in ("input", "output"):
                    if role in entry.values:
                        out.extend(_block(role, entry.values[role], width))
        for answer in log.answers:
            out.extend(_block("final answer", answer, width))
        out.append("")
    return "\n".join(out)
