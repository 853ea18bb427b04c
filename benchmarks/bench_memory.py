"""Agent memory: recall quality on a labelled set, and recall latency against a brute-force scan.

Quality: the set of ``memory_recall_set.py`` (seeded) is learned through
``memory.learn`` (phase 1, then the superseding updates of phase 2) and each
query is recalled through ``memory.recall``; recall@5 and MRR (over the top
10) are reported overall and per kind (paraphrase, superseded, as_of).

Latency: 10k and 100k synthetic memories are written to an in-memory store as
learn events, then the same queries run through (a) the index search, (b) a
full ``recall`` (index refresh check, ranking, and the recorded recall
activity), and (c) a brute-force scan scoring every memory with the same
BM25 from pre-tokenised documents, interleaved in the same run. Targets:
recall at 100k >= 10x faster than the scan, and sub-linear growth from 10k to
100k (time ratio well under the 10x corpus ratio).
"""

from __future__ import annotations

import heapq
import math
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import interleaved, write_section
from memory_recall_set import generate

from trails.kernel import Context
from trails.memory import service
from trails.memory.events import MemoryLearned
from trails.memory.index import Query
from trails.memory.lexical import tokenize
from trails.prov import Recorder
from trails.store import open_store, set_default_store


def quality(seed: int = 7) -> tuple[str, dict[str, float]]:
    data = generate(seed)
    store = open_store("memory:")
    set_default_store(store)
    ctx = Context.open("did:local:bench", recorder=Recorder(store))
    ids: dict[str, str] = {}
    mid: datetime | None = None
    for m in data.memories:
        if m.phase == 2 and mid is None:
            mid = datetime.now(UTC)
            time.sleep(0.002)
        learned = service.learn(
            ctx,
            m.content,
            topic=m.topic,
            scope="shared",
            supersedes=ids[m.supersedes] if m.supersedes else None,
        )
        ids[m.key] = learned.id
    by_kind: dict[str, list[tuple[int, float]]] = {}
    for q in data.queries:
        hits = service.recall(
            ctx, q.text, scope="shared", k=10, as_of=mid if q.as_of_phase1 else None
        )
        ranked = [h.id for h in hits]
        target = ids[q.relevant]
        rank = ranked.index(target) + 1 if target in ranked else 0
        by_kind.setdefault(q.kind, []).append((rank, 1.0 / rank if rank else 0.0))
    rows = []
    overall: list[tuple[int, float]] = [x for v in by_kind.values() for x in v]
    figures = {}
    for kind, results in [("all", overall), *sorted(by_kind.items())]:
        r5 = sum(1 for rank, _ in results if 0 < rank <= 5) / len(results)
        mrr = sum(rr for _, rr in results) / len(results)
        rows.append(f"| {kind} | {len(results)} | {r5:.3f} | {mrr:.3f} |")
        figures[kind] = r5
        if kind == "all":
            figures["mrr"] = mrr
    set_default_store(None)
    store.close()
    table = "\n".join(
        [
            f"Labelled set (seed {seed}): {len(data.memories)} memories "
            f"({sum(1 for m in data.memories if m.supersedes)} superseding updates), "
            f"{len(data.queries)} queries, learned and recalled through the library.",
            "",
            "| queries | n | recall@5 | MRR@10 |",
            "| --- | ---: | ---: | ---: |",
            *rows,
        ]
    )
    return table, figures


def corpus(n: int, seed: int) -> list[str]:
    """``n`` memory texts: the labelled generator's facts and notes, repeated with fresh names."""
    texts: list[str] = []
    round_ = 0
    while len(texts) < n:
        texts += [m.content for m in generate(seed + round_, queries=1).memories]
        round_ += 1
    return texts[:n]


def load(n: int, seed: int = 11) -> tuple[Context, list[str]]:
    store = open_store("memory:")
    recorder = Recorder(store)
    ctx = Context.open("did:local:bench", recorder=recorder)
    texts = corpus(n, seed)
    graph = recorder.minter.graph("memory/shared")
    start = datetime.now(UTC) - timedelta(days=60)
    batch = []
    for i, text in enumerate(texts):
        at = start + timedelta(seconds=i * 30)
        event = MemoryLearned(
            session=ctx.session,
            activity=recorder.minter.activity(),
            parent=None,
            agent_did="did:local:bench",
            memory=recorder.minter.entity(),
            memory_graph=graph,
            content=text,
            confidence=0.5 + (i % 50) / 100,
            scope="shared",
            started=at,
            ended=at,
        )
        batch += recorder.quads(event)
        if len(batch) > 50_000:
            store.write(batch)
            batch = []
    store.write(batch)
    queries = [q.text for q in generate(seed).queries[:200]]
    return ctx, queries


class BruteForce:
    """Scores every memory with the same BM25, from documents tokenised once up front."""

    def __init__(self, ctx: Context) -> None:
        idx = service.index(ctx)
        self.docs = [idx.get(mid) for mid in list(idx._by_id)]
        self.tfs = [
            Counter(tokenize(" ".join((m.content, m.topic or "", *m.tags)))) for m in self.docs
        ]
        self.lengths = [sum(tf.values()) for tf in self.tfs]
        self.avg = sum(self.lengths) / len(self.lengths)
        df: Counter[str] = Counter()
        for tf in self.tfs:
            df.update(tf.keys())
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}

    def search(self, text: str, k: int = 5) -> list[str]:
        terms = set(tokenize(text))
        k1, b = 1.2, 0.75
        scored = []
        for i, tf in enumerate(self.tfs):
            s = 0.0
            for t in terms:
                f = tf.get(t)
                if f:
                    s += (
                        self.idf[t]
                        * f
                        * (k1 + 1)
                        / (f + k1 * (1 - b + b * self.lengths[i] / self.avg))
                    )
            if s > 0 and self.docs[i].invalidated_at is None:
                scored.append((s, i))
        return [self.docs[i].id for _, i in heapq.nlargest(k, scored)]


def latency(n: int) -> dict[str, float]:
    ctx, queries = load(n)
    t0 = time.perf_counter()
    idx = service.index(ctx)
    load_s = time.perf_counter() - t0
    brute = BruteForce(ctx)
    weights = service.config().weights
    cycle = {"i": 0}

    def next_query() -> str:
        cycle["i"] = (cycle["i"] + 1) % len(queries)
        return queries[cycle["i"]]

    def index_search() -> None:
        q = Query(next_query(), frozenset({"shared"}), "did:local:bench", ctx.session)
        idx.search(q, 5, datetime.now(UTC), weights)

    def full_recall() -> None:
        service.recall(ctx, next_query(), scope="shared", k=5)

    def scan() -> None:
        brute.search(next_query())

    t_index, t_scan = interleaved(index_search, scan, rounds=5, number=8 if n > 50_000 else 40)
    t_recall, _ = interleaved(full_recall, lambda: None, rounds=5, number=100)
    return {"n": n, "load": load_s, "index": t_index, "recall": t_recall, "scan": t_scan}


def main() -> None:
    table, figures = quality()
    print(table)
    small, large = latency(10_000), latency(100_000)
    for r in (small, large):
        print(r)
    lines = [
        "| memories | index load (s) | index search (ms) | full recall (ms) | brute-force scan (ms) | scan / recall |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in (small, large):
        lines.append(
            f"| {r['n']:,} | {r['load']:.2f} | {r['index'] * 1e3:.3f} | {r['recall'] * 1e3:.3f} "
            f"| {r['scan'] * 1e3:.1f} | {r['scan'] / r['recall']:.0f}x |"
        )
    growth_recall = large["recall"] / small["recall"]
    growth_index = large["index"] / small["index"]
    growth_scan = large["scan"] / small["scan"]
    verdict = (
        f"At 100k, full recall is **{large['scan'] / large['recall']:.0f}x** faster than the scan "
        f"(target >= 10x). From 10k to 100k memories (10x), full recall time grows "
        f"{growth_recall:.2f}x, index search {growth_index:.2f}x, the scan {growth_scan:.2f}x "
        "(target: sub-linear, well under 10x). Recall@5 overall "
        f"**{figures['all']:.3f}** (target >= 0.9), MRR@10 {figures['mrr']:.3f}."
    )
    body = "\n".join(
        [
            "## Agent memory (`benchmarks/bench_memory.py`)",
            "",
            "### Recall quality",
            "",
            table,
            "",
            "### Recall latency",
            "",
            "Synthetic memories written as learn events to an in-memory store; 200 paraphrase "
            "queries cycled. *Index search* is the ranked lookup alone; *full recall* adds the "
            "store freshness check and the recorded recall activity (one atomic write); the "
            "*scan* scores every memory with the same BM25 from pre-tokenised documents. "
            "Medians of interleaved rounds in one process.",
            "",
            *lines,
            "",
            verdict,
        ]
    )
    write_section("memory", body)
    print(verdict)


if __name__ == "__main__":
    main()
