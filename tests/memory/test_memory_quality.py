"""Recall quality on the labelled set the benchmark uses: the stemmer swap kept recall@5 >= 0.9."""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from trails.kernel import Context
from trails.memory import service
from trails.prov import Recorder
from trails.store import open_store

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from memory_recall_set import generate


def test_recall_at_5_on_the_labelled_set() -> None:
    # a store of its own: its 100k quads are the benchmark's data, not shape-checked at teardown
    store = open_store("memory:")
    ctx = Context.open("did:local:bench", recorder=Recorder(store))
    data = generate(7)
    ids: dict[str, str] = {}
    mid: datetime | None = None
    for phase in (1, 2):
        batch = [m for m in data.memories if m.phase == phase]
        if phase == 2:
            mid = datetime.now(UTC)
            time.sleep(0.002)
        items: list[dict[str, Any]] = [
            {
                "content": m.content,
                "confidence": m.confidence,
                "topic": m.topic,
                "valid_from": m.valid_from,
                "valid_until": m.valid_until,
                "supersedes": ids[m.supersedes] if m.supersedes else None,
            }
            for m in batch
        ]
        learned = service.learn_many(ctx, items, scope="shared")
        ids.update({m.key: x.id for m, x in zip(batch, learned, strict=True)})
    found = 0
    for q in data.queries:
        hits = service.recall(
            ctx,
            q.text,
            scope="shared",
            k=5,
            as_of=mid if q.as_of_phase1 else None,
            valid_at=q.valid_at,
        )
        found += ids[q.relevant] in {h.id for h in hits}
    store.close()
    assert found / len(data.queries) >= 0.9
