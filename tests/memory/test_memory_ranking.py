"""Recall ranking: word forms meet through the Snowball (Porter2) stemmer, in the index and in recall."""

from __future__ import annotations

import pytest

import trails.memory as memory
from trails.kernel import Context
from trails.memory.lexical import Bm25Index, stem, tokenize


@pytest.mark.parametrize(
    "forms",
    [
        ("renew", "renewed", "renewing", "renewal", "renews"),
        ("deploy", "deployed", "deploying", "deployment", "deployments"),
        ("rotate", "rotated", "rotating", "rotation", "rotations"),
        ("approve", "approves", "approved", "approval", "approver"),
        ("connect", "connected", "connecting", "connection", "connections"),
        ("maintain", "maintained", "maintainer", "maintainers"),
        ("release", "released", "releases", "releasing"),
        ("time", "timed", "timing", "times"),
        ("escalate", "escalated", "escalation", "escalations"),
        ("scale", "scaled", "scaling", "scales"),
        ("query", "queries", "queried"),
        ("run", "runs", "running"),
        ("log", "logs", "logging", "logged"),
    ],
)
def test_word_forms_share_one_stem(forms: tuple[str, ...]) -> None:
    assert len({stem(w) for w in forms}) == 1, {w: stem(w) for w in forms}


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        # published Porter2 (Snowball English) outputs
        ("consistently", "consist"),
        ("consolation", "consol"),
        ("generously", "generous"),
        ("knightly", "knight"),
        ("hopping", "hop"),
        ("hoping", "hope"),
        ("cries", "cri"),
        ("ties", "tie"),
        ("enjoying", "enjoy"),
        ("happy", "happi"),
    ],
)
def test_stems_follow_porter2(word: str, expected: str) -> None:
    assert stem(word) == expected


@pytest.mark.parametrize(
    "word",
    [
        "news",
        "owner",
        "status",
        "gas",
        "by",
        "sky",
        "proceed",
        "port",
        "api",
        "x2",
        "東京",
    ],
)
def test_short_irregular_and_non_ascii_words_keep_their_shape(word: str) -> None:
    assert stem(word) == word


def test_accented_word_forms_meet() -> None:
    # Snowball English strips a plural "s" from any word, accented ones too
    assert stem("données") == stem("donnée")


def test_distinct_words_stay_distinct() -> None:
    # no over-stemming of the words a near-duplicate differs in
    pairs = [
        ("port", "portal"),
        ("owner", "own"),
        ("general", "generous"),
        ("replica", "replicate"),
    ]
    assert all(stem(a) != stem(b) for a, b in pairs), [(stem(a), stem(b)) for a, b in pairs]


def test_tokenize_stems_and_drops_stop_words() -> None:
    assert tokenize("The certificate renewal of the Kavor API") == [
        "certif",
        "renew",
        "kavor",
        "api",
    ]
    assert tokenize("Certificates are RENEWED") == tokenize("certificate renewal")


def test_index_scores_a_derived_form_like_the_memory_word() -> None:
    index = Bm25Index()
    index.add(0, tokenize("The Kavor certificate is renewed every 30 days"))
    index.add(1, tokenize("The Kavor logs are kept for 30 days"))
    scores = index.score(tokenize("Kavor renewal"))
    assert scores[0] > scores[1] > 0


def test_recall_matches_a_noun_query_to_a_verb_memory(ctx: Context) -> None:
    # the distractor is more confident and newer: only the word form can put the target first
    renewed = memory.learn(
        "Certificates of the Kavor gateway are renewed every 30 days.",
        confidence=0.6,
        scope="shared",
        ctx=ctx,
    )
    deployed = memory.learn(
        "The Kavor gateway is deployed to staging every Monday.",
        confidence=0.7,
        scope="shared",
        ctx=ctx,
    )
    memory.learn(
        "The Kavor gateway keeps its logs for 14 days.", confidence=1.0, scope="shared", ctx=ctx
    )
    hits = memory.recall("Kavor gateway renewal", scope="shared", k=3, ctx=ctx)
    assert hits[0].id == renewed.id
    assert hits[0].relevance == 1.0 and hits[1].relevance < 1.0
    hits = memory.recall("Kavor gateway deployment", scope="shared", k=3, ctx=ctx)
    assert hits[0].id == deployed.id


def test_superseded_version_is_not_recalled_but_answers_as_of(ctx: Context) -> None:
    old = memory.learn("The Kavor API listens on port 8080 in staging.", scope="shared", ctx=ctx)
    new = memory.learn(
        "The Kavor API listens on port 9090 in staging.",
        scope="shared",
        supersedes=old.id,
        ctx=ctx,
    )
    hits = memory.recall("which port is the Kavor API listening on", scope="shared", ctx=ctx)
    assert [h.id for h in hits] == [new.id]
    before = memory.recall(
        "which port is the Kavor API listening on",
        scope="shared",
        as_of=old.recorded_at,
        ctx=ctx,
    )
    assert [h.id for h in before] == [old.id]


def test_a_common_term_only_rescores_what_rarer_terms_found() -> None:
    index = Bm25Index()
    for doc in range(3000):
        words = ["filler"] + (["staging"] if doc < 100 else []) + (["kavor"] if doc < 2 else [])
        index.add(doc, words)
    # "staging" is in over 2% of the documents: after "kavor" it only re-scores kavor's
    both = index.score(["kavor", "staging"], depth=50)
    assert set(both) == {0, 1}
    assert both[0] > index.score(["kavor"])[0]
    # alone it is still looked up in full
    assert set(index.score(["staging"], depth=50)) == set(range(100))
