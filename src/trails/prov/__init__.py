"""Provenance: the vocabulary, IRI minting, events, and the recorder that writes them.

Data flows one way: the kernel, LLM client, planners and memory build
``Event`` objects; the ``Recorder`` turns each into PROV-O quads and writes
them to the store in one atomic write. Only this package spells PROV IRIs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trails._lazy import lazy_names

if TYPE_CHECKING:
    from trails.prov.builder import QuadBuilder
    from trails.prov.content import canonical_json, sha256_hex
    from trails.prov.events import (
        PLAN_CLASSES,
        CapabilityInvoked,
        EntityRecorded,
        Event,
        LLMCompleted,
        PlanRunEnded,
        PlanRunStarted,
        PolicyDecided,
        SessionEnded,
        SessionStarted,
        Terminated,
    )
    from trails.prov.iri import Minter, agent_iri
    from trails.prov.recorder import Recorder, default_recorder, reset_default_recorder
    from trails.prov.vocab import NAMESPACES, PROV, RDF, RDFS, TRAILS, XSD, T, sparql_prefixes

# each name loads its module on first use (``trails._lazy``): a reader of the vocabulary
# does not build the event models
__getattr__, __dir__ = lazy_names(
    __name__,
    {
        "QuadBuilder": "trails.prov.builder",
        "canonical_json": "trails.prov.content",
        "sha256_hex": "trails.prov.content",
        **dict.fromkeys(
            (
                "PLAN_CLASSES",
                "CapabilityInvoked",
                "EntityRecorded",
                "Event",
                "LLMCompleted",
                "PlanRunEnded",
                "PlanRunStarted",
                "PolicyDecided",
                "SessionEnded",
                "SessionStarted",
                "Terminated",
            ),
            "trails.prov.events",
        ),
        "Minter": "trails.prov.iri",
        "agent_iri": "trails.prov.iri",
        "Recorder": "trails.prov.recorder",
        "default_recorder": "trails.prov.recorder",
        "reset_default_recorder": "trails.prov.recorder",
        **dict.fromkeys(
            ("NAMESPACES", "PROV", "RDF", "RDFS", "TRAILS", "XSD", "T", "sparql_prefixes"),
            "trails.prov.vocab",
        ),
    },
)

__all__ = [
    "NAMESPACES",
    "PLAN_CLASSES",
    "PROV",
    "RDF",
    "RDFS",
    "TRAILS",
    "XSD",
    "CapabilityInvoked",
    "EntityRecorded",
    "Event",
    "LLMCompleted",
    "Minter",
    "PlanRunEnded",
    "PlanRunStarted",
    "PolicyDecided",
    "QuadBuilder",
    "Recorder",
    "SessionEnded",
    "SessionStarted",
    "T",
    "Terminated",
    "agent_iri",
    "canonical_json",
    "default_recorder",
    "reset_default_recorder",
    "sha256_hex",
    "sparql_prefixes",
]
