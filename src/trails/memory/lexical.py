"""The lexical side of recall: tokenising, and a BM25 inverted index.

Recall must stay fast as memory grows, so relevance is computed from an
in-process inverted index (term -> {document: term frequency}) rather than by
scanning every memory. Only the postings of the query's terms are read; and a
term found in a large share of the memories (a near stop word for this corpus)
only re-scores documents that rarer query terms already found, instead of
dragging its whole posting list in. That keeps a recall's work proportional to
how specific the query is, not to how many memories exist.

Tokens are Unicode words, NFKC-normalised and case-folded, minus English stop
words, reduced to their Snowball English (Porter2) stems, from the maintained
C implementation in PyStemmer, so word forms meet: "rejects", "rejected" and "rejecting", and also "deployed" and
"deployment", "renewed" and "renewal". Documents are content plus topic plus
tags.
"""

from __future__ import annotations

import heapq
import math
import re
import threading
import unicodedata
from array import array
from collections import Counter
from collections.abc import Iterable
from itertools import accumulate

import Stemmer

__all__ = ["INT", "STOPWORDS", "Bm25Index", "stem", "tokenize"]

INT = "i"  # the array type of exported postings and lengths (checked to be 4 bytes on use)

_WORD = re.compile(r"\w+", re.UNICODE)

_STOP_TEXT = """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself
    yourselves"""
STOPWORDS = frozenset(_STOP_TEXT.split())


_local = threading.local()


def _stemmer() -> Stemmer.Stemmer:
    # a PyStemmer object is not thread-safe: one per thread
    stemmer: Stemmer.Stemmer | None = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = Stemmer.Stemmer("english")
    return stemmer


def stem(word: str) -> str:
    """The Snowball English (Porter2) stem of one lower-case word."""
    result: str = _stemmer().stemWord(word)
    return result


def tokenize(text: str) -> list[str]:
    """The index terms of ``text``: normalised, case-folded, stemmed, stop words dropped."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    words = [w for w in _WORD.findall(folded) if w not in STOPWORDS]
    return list(_stemmer().stemWords(words)) if words else []


class Bm25Index:
    """An inverted index scored with Okapi BM25.

    Documents are numbered 0, 1, 2... in the order they are added. Not thread-safe on
    its own: ``MemoryIndex`` serialises access.

    Args:
        k1: term-frequency saturation.
        b: length normalisation.
        common: share of all documents (at least 50) above which a term only
            re-scores documents found by rarer terms of the same query. A term
            in more than 2% of the memories has an IDF under about 3.9 and
            seldom decides a candidate on its own, while reading its whole
            posting list would make recall grow with the corpus.
    """

    def __init__(self, k1: float = 1.2, b: float = 0.75, common: float = 0.02) -> None:
        self.k1 = k1
        self.b = b
        self.common = common
        self.postings: dict[str, dict[int, int]] = {}
        self.lengths: list[int] | array[int] = []
        self.total_length = 0
        # restored from a snapshot and not used yet: term -> (first pair, pairs) in _flat
        self._cold: dict[str, tuple[int, int]] = {}
        self._flat: array[int] = array(INT)

    def __len__(self) -> int:
        return len(self.lengths)

    def add(self, doc: int, terms: Iterable[str]) -> None:
        """Index document ``doc`` (the next number: 0, 1, 2...) with ``terms``."""
        if doc != len(self.lengths):
            raise ValueError(
                f"documents are numbered 0, 1, 2... in order: expected {len(self.lengths)}"
            )
        counts = Counter(terms)
        length = sum(counts.values())
        self.lengths.append(length)
        self.total_length += length
        postings = self.postings
        for term, tf in counts.items():
            bucket = postings.get(term) if term not in self._cold else self._warm(term)
            if bucket is None:
                postings[term] = {doc: tf}
            else:
                bucket[doc] = tf

    def _warm(self, term: str) -> dict[int, int] | None:
        """The posting dict of ``term``, built from restored flat data on first use."""
        bucket = self.postings.get(term)
        if bucket is None and term in self._cold:
            start, count = self._cold.pop(term)
            flat = self._flat[2 * start : 2 * (start + count)]
            docs = flat[0::2]
            if min(docs) < 0 or max(docs) >= len(self.lengths):
                raise ValueError(f"restored postings of {term!r} name unknown documents")
            bucket = self.postings[term] = dict(zip(docs, flat[1::2], strict=True))
        return bucket

    def export(self) -> tuple[list[str], list[int], array[int], array[int]]:
        """The index as flat data: its terms, their posting counts, ``doc, tf`` pairs, lengths.

        Documents must be the dense range ``0..n-1`` (as ``MemoryIndex`` hands them out).
        """
        terms = sorted({*self.postings, *self._cold})
        flat = array(INT)
        counts: list[int] = []
        for term in terms:
            cold = self._cold.get(term)
            if cold is not None:  # never used since restored: copied as it was
                start, count = cold
                flat.extend(self._flat[2 * start : 2 * (start + count)])
            else:
                bucket = self.postings[term]
                count = len(bucket)
                flat.extend(x for pair in bucket.items() for x in pair)
            counts.append(count)
        return terms, counts, flat, array(INT, self.lengths)

    @classmethod
    def restore(
        cls, terms: list[str], counts: list[int], flat: array[int], lengths: array[int]
    ) -> Bm25Index:
        """The index ``export`` gave (each term's posting count alongside), checked.

        Posting dicts are built (and their documents checked) per term on first
        use, so restoring costs little whatever the size of the index.

        Raises:
            ValueError: the data does not describe an index of ``len(lengths)`` documents.
        """
        if len(terms) != len(counts) or sum(counts) * 2 != len(flat) or min(counts, default=1) < 1:
            raise ValueError("postings of the wrong shape")
        if not all(isinstance(t, str) for t in terms) or len(set(terms)) != len(terms):
            raise ValueError("bad terms")
        if lengths and min(lengths) < 0:
            raise ValueError("negative document lengths")
        index = cls()
        index.lengths = lengths
        index.total_length = sum(lengths)
        index._flat = flat
        starts = [0, *accumulate(counts)][:-1]
        index._cold = dict(zip(terms, zip(starts, counts, strict=True), strict=True))
        return index

    def idf(self, term: str) -> float:
        """BM25 inverse document frequency of ``term`` (0 when unknown)."""
        cold = self._cold.get(term)
        df = cold[1] if cold is not None else len(self.postings.get(term, ()))
        if not df:
            return 0.0
        n = len(self.lengths)
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def score(self, terms: Iterable[str], depth: int = 0) -> dict[int, float]:
        """BM25 scores of the documents that contain the query ``terms``.

        Terms are taken rarest first. With ``depth`` > 0, once the ``depth``-th
        best score so far exceeds what all remaining terms together could add
        (their upper bounds, MaxScore style), the remaining terms only re-score
        documents already found: a document they alone would bring in could not
        reach the top ``depth``. The top ``depth`` is then still exact.

        Args:
            terms: query terms (repeats count once).
            depth: how many best documents must be exact (0: score every match).

        Returns:
            ``{document: score}`` for the documents reached.
        """
        n = len(self.lengths)
        if not n:
            return {}
        avg = self.total_length / n or 1.0
        k1, b = self.k1, self.b
        norm = k1 * (1.0 - b)
        slope = k1 * b / avg
        lengths = self.lengths
        postings_of = self.postings
        unique = [t for t in dict.fromkeys(terms) if self._warm(t) is not None]
        unique.sort(key=lambda t: len(postings_of[t]))
        idfs = [self.idf(t) for t in unique]
        # most one term can add to a document: tf / (tf + k1 (1 - b)) < 1, times (k1 + 1)
        bounds = [idf * (k1 + 1.0) for idf in idfs]
        remaining = sum(bounds)
        limit = max(self.common * n, 50.0)
        acc: dict[int, float] = {}
        for term, idf, bound in zip(unique, idfs, bounds, strict=True):
            remaining -= bound
            postings = postings_of[term]
            essential = not acc or (
                len(postings) <= limit and not self._pruned(acc, depth, bound + remaining)
            )
            if not essential:
                # re-score what rarer terms found, add nothing new
                for doc, old in acc.items():
                    tf = postings.get(doc)
                    if tf:
                        acc[doc] = old + idf * tf * (k1 + 1.0) / (tf + norm + slope * lengths[doc])
                continue
            get = acc.get
            for doc, tf in postings.items():
                acc[doc] = get(doc, 0.0) + idf * tf * (k1 + 1.0) / (
                    tf + norm + slope * lengths[doc]
                )
        return acc

    @staticmethod
    def _pruned(acc: dict[int, float], depth: int, reachable: float) -> bool:
        """True when a document scored only by the remaining terms cannot enter the top ``depth``."""
        if depth <= 0 or len(acc) < depth:
            return False
        threshold = heapq.nlargest(depth, acc.values())[-1]
        return threshold > reachable
