"""The ledger's cost: sealing per session, verifying per 1,000 sessions, one session at any size.

Five measurements, each against a baseline from the same run, on on-disk stores:

- **seal cost per session**: a session (open, three ``invoke`` calls, close)
  recorded by a recorder with the sealer installed (the default wiring:
  the seal rides in the end's write, after reading the ledger pointer) against the same session
  on a recorder without it. Interleaved rounds.
- **verify per 1,000 sessions**: ``verify(store)`` over a store of 1,000 sealed
  sessions (every graph recomputed, every chain walked) against the floor for
  that work: dumping the same store as N-Quads and hashing the dump with SHA-256.
- **verify one session**: ``verify(store, session=...)`` at 1,000 sessions
  against the same call at 100 sessions (constant time means a ratio near 1).
- **full verification throughput**: sessions per second of ``verify(store)``
  (``trails verify --full``), and the canonical hashing of every sealed graph
  alone against SHA-256 of the store's whole N-Quads dump.
- **quick verification**: ``verify(store, quick=True)`` after a
  checkpoint, with 10 sessions sealed since, against the full verification.

Every recorder here is the default one (``Recorder.from_settings``: sealed).

Run: ``python benchmarks/bench_ledger.py`` (or ``python benchmarks/run_all.py ledger``).
"""

from __future__ import annotations

import hashlib
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import interleaved, write_section

import trails
from trails.evidence.canonical import graph_digest
from trails.evidence.checkpoint import record_checkpoint
from trails.evidence.ledger import ledger_iri, read_ledger
from trails.evidence.verify import verify
from trails.kernel import Context
from trails.prov import Minter, Recorder
from trails.store import IRI, Store, open_store


@trails.capability(id="bench.ledger.echo", description="Returns its argument.")
def echo(text: str) -> str:
    return text


def session(recorder: Recorder) -> IRI:
    with Context.open("did:local:bench", recorder=recorder) as ctx:
        for i in range(3):
            trails.invoke("bench.ledger.echo", {"text": f"call {i}"}, ctx=ctx)
        return IRI(str(ctx.session))


def build(path: Path, n: int) -> tuple[Store, list[IRI]]:
    store = open_store(path)
    recorder = Recorder.from_settings(store=store)
    return store, [session(recorder) for _ in range(n)]


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="trails-bench-ledger-") as tmp:
        root = Path(tmp)
        sealed_store, plain_store = open_store(root / "sealed"), open_store(root / "plain")
        sealed = Recorder.from_settings(store=sealed_store)
        plain = Recorder(plain_store)
        for _ in range(20):  # warm both stores
            session(sealed), session(plain)
        t_sealed, t_plain = interleaved(
            lambda: session(sealed), lambda: session(plain), rounds=11, number=30
        )
        sealed_store.close(), plain_store.close()

        big, sessions = build(root / "big", 1000)
        small, small_sessions = build(root / "small", 100)

        def floor() -> None:
            hashlib.sha256(big.dump(format="nquads") or b"").hexdigest()

        report = verify(big)
        assert report.ok and report.graphs_checked == 1000, report.findings[:3]
        t_verify, t_floor = interleaved(lambda: verify(big), floor, rounds=3, number=1)
        one_big, one_small = interleaved(
            lambda: verify(big, session=sessions[500]),
            lambda: verify(small, session=small_sessions[50]),
            rounds=15,
            number=10,
        )
        graphs = [s.graph for s in read_ledger(big, ledger_iri(Minter())).seals]

        def hash_all() -> None:
            for g in graphs:
                graph_digest(big, g)

        t_hash, t_floor2 = interleaved(hash_all, floor, rounds=3, number=1)
        recorder = Recorder.from_settings(store=big)
        full = verify(big)
        record_checkpoint(
            recorder,
            mode=full.mode,
            seals=full.seals,
            graphs=full.graphs_checked,
            verified=full.chain_tips,
            previous=None,
        )
        for _ in range(10):
            session(recorder)
        inc = verify(big, quick=True)
        assert inc.ok and inc.mode == "quick" and inc.graphs_checked == 10, inc.findings
        t_inc, t_full = interleaved(
            lambda: verify(big, quick=True), lambda: verify(big), rounds=3, number=1
        )
        big.close(), small.close()

    seal_ratio = t_sealed / t_plain
    verify_ratio = t_verify / t_floor
    one_ratio = one_big / one_small
    write_section(
        "ledger",
        f"""## The ledger: sealing and verifying (issue 12 items 4-6, issue 19 item 1)

`python benchmarks/bench_ledger.py`, on-disk stores. A session is `Context.open`,
three `invoke` calls and the close; sealing adds one small read (the ledger's
newest-seal pointer; the session graph is not read back, the sealer kept what its
recorder wrote) and no write: the seal rides in the end's write.

| | time | ratio |
|---|---|---|
| session recorded with the sealer | {t_sealed * 1e3:.2f} ms | **{seal_ratio:.2f}** x the same session unsealed |
| session recorded without it (baseline) | {t_plain * 1e3:.2f} ms | |
| seal cost per session | {(t_sealed - t_plain) * 1e3:.2f} ms | |
| `verify` of 1,000 sealed sessions | {t_verify:.2f} s | **{verify_ratio:.1f}** x the floor |
| floor: N-Quads dump of that store + SHA-256 (baseline) | {t_floor:.2f} s | |
| `verify --session` at 1,000 sessions | {one_big * 1e3:.1f} ms | **{one_ratio:.2f}** x at 100 sessions (target <= 1.5) |
| `verify --session` at 100 sessions (baseline) | {one_small * 1e3:.1f} ms | |

Full verification (`trails verify --full`) of that store: **{1000 / t_verify:,.0f} sessions
per second**. Its core, the canonical hash of every sealed graph (on the embedded store
each graph is read as the store's own N-Triples dump and hashed as bytes), takes
{t_hash:.2f} s: **{t_hash / t_floor2:.2f}** x SHA-256 of the whole store's N-Quads dump
({t_floor2:.2f} s in the same rounds). Incremental verification (`trails verify`, from
the checkpoint the previous verification recorded, 10 sessions sealed since): every seal
and chain link rechecked, 10 graphs rehashed, 1,000 counted in one aggregate query.

| 1,010 sealed sessions | time | ratio |
|---|---|---|
| `verify --quick` (10 new) | {t_inc * 1e3:.0f} ms | **{t_inc / t_full:.2f}** x full |
| `verify --full` (baseline) | {t_full * 1e3:.0f} ms | |""",
    )
    print(
        f"seal {seal_ratio:.2f}x ({(t_sealed - t_plain) * 1e3:.2f} ms/session); "
        f"verify 1k {t_verify:.2f}s = {verify_ratio:.1f}x floor; one session {one_ratio:.2f}x; "
        f"hash {t_hash / t_floor2:.2f}x floor; quick {t_inc / t_full:.2f}x full"
    )


if __name__ == "__main__":
    main()
