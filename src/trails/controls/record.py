"""Findings are evidence: each evaluation recorded in plain PROV, sealed in the write itself.

A control's definition is recorded once per version (its id and digest), in a graph of its
own (``<base>graph:control-definitions/<id>/<digest>``) written and sealed the first time
that version is evaluated: a ``trails:Control`` ``prov:Entity`` (``<base>control:<id>:sha256:
<digest>``) with its title, ``trails:controlId``, ``trails:severity``,
``trails:controlScope``, ``trails:definitionSha256`` and ``trails:controlReference``.

``record_evaluation(recorder, evaluation, by=...)`` writes one graph per evaluation
(``<base>graph:controls/<uuid>``) in one atomic write that the sealer seals in that same
write (``completes_graph``), so ``trails verify`` and the transparency log cover it like
any receipt: a finding deleted or edited is a mismatch against the seal, a findings graph
(or a definition's graph) removed is a seal without its graph. In the graph:

- per control that did not pass, a ``trails:ControlEvaluation`` (a ``prov:Activity``)
  that ``prov:used`` the control's definition (by its IRI: the definition is described in
  its own graph, not restated by each evaluation), ``prov:wasInformedBy`` the session it
  read (the session graph's name is the session activity's IRI) with ``trails:readGraph``
  naming each graph read, ``prov:wasAssociatedWith`` the evaluating agent, its
  ``trails:outcome`` (``violated`` / ``timed out`` / ``error``) and
  ``trails:findingCount``;
- for the controls that passed, one ``trails:ControlEvaluation`` alike that
  ``prov:used`` each of their definitions, with the outcome ``passed`` and no finding
  (a pass per control costs one ``prov:used``, not an activity of its own);
- per violation, a ``trails:ControlFinding`` (a ``prov:Entity``) ``prov:wasGeneratedBy``
  that evaluation, with ``trails:findingOf`` (the control definition), ``trails:controlId``,
  ``trails:severity``, ``trails:findingSubject``, ``trails:findingSession`` and an
  optional ``trails:findingMessage``.

A passed evaluation is recorded too, so the absence of findings is itself provable.
``recorded_results`` reads them back (the CLI's ``explain``, the report, a console page),
joining each evaluation to its definition's graph (or, as recorded before definitions had
graphs of their own, to the definition restated in the findings graph itself);
``definition_changes`` compares recorded digests with the control files given.
"""

from __future__ import annotations

import threading
import uuid
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from trails.controls.evaluate import Evaluation
from trails.controls.model import Control
from trails.prov.builder import QuadBuilder
from trails.prov.events import Event
from trails.prov.iri import Minter
from trails.prov.vocab import PROV, T
from trails.store.base import Solutions, Store
from trails.store.terms import IRI, Term
from trails.store.terms import Literal as RDFLiteral

__all__ = [
    "ControlDefined",
    "ControlsEvaluated",
    "RecordedResult",
    "control_iri",
    "definition_changes",
    "definition_graph",
    "findings_graph",
    "record_evaluation",
    "recorded_results",
]


def findings_graph(minter: Minter) -> IRI:
    """A new graph for one evaluation's record (``<base>graph:controls/<uuid>``)."""
    return minter.graph(f"controls/{uuid.uuid4()}")


def control_iri(minter: Minter, control: Control) -> IRI:
    """The IRI of one version of a control's definition (its id and digest)."""
    return IRI.trusted(f"{minter.base}control:{control.id}:sha256:{control.digest}")


def definition_graph(minter: Minter, control: Control) -> IRI:
    """The graph recording one version of a control's definition
    (``<base>graph:control-definitions/<id>/<digest>``)."""
    return minter.graph(f"control-definitions/{control.id}/{control.digest}")


class ControlDefined(Event):
    """One version of a control's definition (``session`` is its own graph), written once
    and sealed in that write: the evaluations that use it name it by its IRI."""

    control: str
    control_id: str
    title: str
    severity: str
    scope: str
    digest: str
    references: tuple[str, ...]
    content_apart = False  # a definition is not personal data

    @property
    def completes_graph(self) -> bool:
        """The graph is whole in this one write: sealed in it, never after it."""
        return True

    def emit(self, b: QuadBuilder) -> None:
        c = IRI.trusted(self.control)
        b.types(c, T.Control, PROV.Entity)
        b.label(c, self.title)
        b.value(c, T.controlId, self.control_id)
        b.value(c, T.severity, self.severity)
        b.value(c, T.controlScope, self.scope)
        b.value(c, T.definitionSha256, self.digest)
        for ref in self.references:
            b.value(c, T.controlReference, ref)


class _Finding(BaseModel):
    model_config = ConfigDict(frozen=True)
    iri: str
    subject: str | None
    session: str | None
    message: str | None


class _Run(BaseModel):
    model_config = ConfigDict(frozen=True)
    activity: str
    control: str
    control_id: str
    title: str  # the definition's, for listeners (its graph records it, not this one)
    severity: str
    digest: str
    outcome: str
    detail: str | None
    session: str | None
    graphs: tuple[str, ...]
    started: datetime
    ended: datetime
    findings: tuple[_Finding, ...]


class ControlsEvaluated(Event):
    """One evaluation of controls (``session`` is its own findings graph). Runs that name
    the same ``activity`` (the controls that passed) are one activity that used each of
    their definitions."""

    by: str
    runs: tuple[_Run, ...]
    content_apart = False  # findings name subjects, never recorded content

    @property
    def completes_graph(self) -> bool:
        """The graph is whole in this one write: sealed in it, never after it."""
        return True

    def emit(self, b: QuadBuilder) -> None:
        agent = b.agent(self.by)
        shared: dict[str, list[_Run]] = {}  # the runs of each activity (the passed share one)
        for run in self.runs:
            shared.setdefault(run.activity, []).append(run)
        for activity, runs in shared.items():
            first = runs[0]
            a = IRI.trusted(activity)
            started, ended = min(r.started for r in runs), max(r.ended for r in runs)
            b.activity(a, T.ControlEvaluation, started, ended)
            ids = ", ".join(r.control_id for r in runs)
            b.label(a, f"control{'s' if len(runs) > 1 else ''} {ids}: {first.outcome}")
            b.add(a, PROV.wasAssociatedWith, agent)
            for run in runs:
                b.add(a, PROV.used, IRI.trusted(run.control))
            b.value(a, T.outcome, first.outcome)
            b.value(a, T.outcomeDetail, first.detail)
            b.value(a, T.findingCount, sum(len(r.findings) for r in runs))
            if first.session is not None:
                b.add(a, PROV.wasInformedBy, IRI.trusted(first.session))
                b.add(a, T.evaluatedSession, IRI.trusted(first.session))
            for g in first.graphs:
                b.add(a, T.readGraph, IRI.trusted(g))
            for run in runs:
                self._findings(b, a, run)

    @staticmethod
    def _findings(b: QuadBuilder, a: IRI, run: _Run) -> None:
        c = IRI.trusted(run.control)
        for f in run.findings:
            e = IRI.trusted(f.iri)
            b.types(e, T.ControlFinding, PROV.Entity)
            b.label(e, f"{run.control_id} ({run.severity}): {f.subject or 'the store'}")
            b.add(e, PROV.wasGeneratedBy, a)
            b.value(e, PROV.generatedAtTime, run.ended)
            b.add(e, T.findingOf, c)
            b.value(e, T.controlId, run.control_id)
            b.value(e, T.severity, run.severity)
            if f.subject is not None:
                b.add(e, T.findingSubject, _node(f.subject))
            if f.session is not None:
                b.add(e, T.findingSession, _node(f.session))
            b.value(e, T.findingMessage, f.message)


def _node(text: str) -> Term:
    """An IRI when ``text`` is one, else a literal (a row may name a value, not a node)."""
    if ":" in text and " " not in text:
        try:
            return IRI(text)
        except (ValueError, UnicodeError):
            pass
    return RDFLiteral(text)


def record_evaluation(recorder: object, evaluation: Evaluation, *, by: str) -> IRI | None:
    """Write ``evaluation`` as evidence in one sealed write; its findings graph (None when
    it evaluated nothing).

    Args:
        recorder: a ``trails.prov.recorder.Recorder``; its sealer (installed when missing)
            seals the graph in the same write.
        evaluation: what ``evaluate_session`` / ``evaluate_store`` returned.
        by: the evaluating agent (a principal's DID).

    Raises:
        StoreError: the write failed; nothing of it was written.
    """
    from trails.evidence.seal import install_sealer
    from trails.prov.recorder import Recorder

    assert isinstance(recorder, Recorder)
    if not evaluation.outcomes:
        return None
    minter = recorder.minter
    sealer = install_sealer(recorder)
    _define(recorder, sealer, [o.control for o in evaluation.outcomes])
    graph = findings_graph(minter)
    runs = []
    passed = Minter.part(graph, "evaluation:passed")  # one activity for all that passed
    for i, o in enumerate(evaluation.outcomes, start=1):
        activity = passed if o.status == "passed" else Minter.part(graph, f"evaluation:{i}")
        runs.append(
            _Run(
                activity=str(activity),
                control=str(control_iri(minter, o.control)),
                control_id=o.control.id,
                title=o.control.title,
                severity=o.control.severity,
                digest=o.control.digest,
                outcome=o.status,
                detail=o.error,
                session=o.session,
                graphs=o.graphs,
                started=o.started,
                ended=o.ended,
                findings=tuple(
                    _Finding(
                        iri=str(Minter.part(graph, f"finding:{i}:{j}")),
                        subject=v.subject,
                        session=v.session,
                        message=v.message,
                    )
                    for j, v in enumerate(o.violations, start=1)
                ),
            )
        )
    # a new graph: sealed from what this write holds, never read back
    sealer.track(graph)
    try:
        recorder.record(ControlsEvaluated(session=str(graph), by=by, runs=tuple(runs)))
    except BaseException:
        sealer.forget([graph])  # a write that raised may have committed: read it back then
        raise
    return graph


_SEALED = """PREFIX trails: <https://w3id.org/trails/ns#>
ASK { GRAPH $ledger { ?seal trails:sealedGraph $graph } }"""

# per recorder: the definition graphs known sealed in its store (looked up once each)
_defined: weakref.WeakKeyDictionary[object, set[IRI]] = weakref.WeakKeyDictionary()
_defined_lock = threading.Lock()


def _define(recorder: object, sealer: object, controls: Sequence[Control]) -> None:
    """Record each definition of ``controls`` not yet recorded: a sealed graph of its own per
    version, looked up in the ledger the first time this recorder meets it, then known."""
    from trails.evidence.ledger import ledger_iri
    from trails.evidence.seal import Sealer
    from trails.prov.recorder import Recorder

    assert isinstance(recorder, Recorder) and isinstance(sealer, Sealer)
    minter = recorder.minter
    with _defined_lock:
        known = _defined.setdefault(recorder, set())
    wanted: dict[IRI, Control] = {}
    for c in controls:
        g = definition_graph(minter, c)
        if g not in known:
            wanted.setdefault(g, c)
    if not wanted:
        return
    ledger = ledger_iri(minter)
    for g, c in wanted.items():
        if recorder.store.query(_SEALED, {"ledger": ledger, "graph": g}):
            known.add(g)
            continue
        sealer.track(g)
        try:
            recorder.record(
                ControlDefined(
                    session=str(g),
                    control=str(control_iri(minter, c)),
                    control_id=c.id,
                    title=c.title,
                    severity=c.severity,
                    scope=c.scope,
                    digest=c.digest,
                    references=c.references,
                )
            )
        except BaseException:
            sealer.forget([g])
            raise
        known.add(g)


@dataclass(frozen=True)
class RecordedResult:
    """One recorded evaluation of a control, read back from the store."""

    graph: str
    control: str
    digest: str
    outcome: str
    findings: int
    ended: str
    session: str | None


def _results_query(*, one_control: bool, sealed: bool) -> str:
    """The query of ``recorded_results``: of one control (``$id``) or all; with ``sealed``,
    only graphs the ledger (``$ledger``) seals."""
    control = "$id" if one_control else "?id"
    ledger = " $ledger" if sealed else ""
    seal = (
        "\n  FILTER EXISTS { GRAPH $ledger { ?seal trails:sealedGraph ?g } }"
        "\n  FILTER EXISTS { GRAPH $ledger { ?defined trails:sealedGraph ?d } }"
        if sealed
        else ""
    )
    return f"""
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?g {control} ?digest ?outcome ?count ?ended ?session{ledger} WHERE {{
  GRAPH ?g {{
    ?a a trails:ControlEvaluation ; prov:used ?c ; trails:outcome ?outcome ;
       trails:findingCount ?count ; prov:endedAtTime ?ended .
    OPTIONAL {{ ?a trails:evaluatedSession ?session }}
  }}
  GRAPH ?d {{ ?c a trails:Control ; trails:controlId {control} ; trails:definitionSha256 ?digest }}{seal}
}} ORDER BY DESC(?ended) ?g
"""


def recorded_results(
    store: Store,
    control_id: str | None = None,
    *,
    limit: int | None = None,
    ledger: IRI | None = None,
) -> list[RecordedResult]:
    """Recorded evaluations, newest first (of one control when ``control_id`` is given).

    With ``ledger``, only evaluations in a graph that ledger seals count: a findings graph
    copied or forged under a new name (no seal) never stands for a recorded run."""
    text = _results_query(one_control=control_id is not None, sealed=ledger is not None)
    bindings: dict[str, Term] = {}
    if control_id is not None:
        bindings["id"] = RDFLiteral(control_id)
    if ledger is not None:
        bindings["ledger"] = ledger
    result = store.query(text, bindings) if bindings else store.query(text)
    assert isinstance(result, Solutions)
    out = []
    for row in result:
        out.append(
            RecordedResult(
                graph=str(row["g"]),
                control=_lex(row.get("id")) or control_id or "",
                digest=_lex(row.get("digest")) or "",
                outcome=_lex(row.get("outcome")) or "",
                findings=int(_lex(row.get("count")) or 0),
                ended=_lex(row.get("ended")) or "",
                session=str(row["session"]) if row.get("session") is not None else None,
            )
        )
        if limit is not None and len(out) >= limit:
            break
    return out


def _lex(term: Term | None) -> str | None:
    return term.value if isinstance(term, RDFLiteral) else None


def definition_changes(
    store: Store, controls: Sequence[Control], *, ledger: IRI | None = None
) -> list[tuple[str, str, str]]:
    """Controls whose file differs from the definition their newest recorded evaluation
    used: ``(id, recorded digest, current digest)`` (a definition edited after it ran and
    not evaluated since; with ``ledger``, only sealed evaluations count)."""
    newest: dict[str, str] = {}
    for r in recorded_results(store, ledger=ledger):  # newest first
        newest.setdefault(r.control, r.digest)
    return sorted(
        (c.id, newest[c.id], c.digest)
        for c in controls
        if c.id in newest and newest[c.id] != c.digest
    )
