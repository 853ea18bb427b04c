"""Compliance features' cost: evidence bundles, and PII masking on the recording path.

Measurements, each against a baseline from the same run:

- **bundle**: ``write_bundle`` of 200 sealed sessions (TriG per graph, the
  chain segment, keys, the pack's answers over the bundle, the manifest, the
  canonical zip) against a plain TriG export of the same graphs to a file;
  ``verify_bundle`` of that bundle (no store) against the same export.
  Per session, and as ratios.
- **masking**: a session (open, three ``invoke`` calls with a customer record
  holding an e-mail, a phone number and a card number, close) recorded with all
  five named masking rules against the same session recorded without rules.
  Interleaved rounds.

- **retention** (``retention(n)``, its own section): ``retention apply`` on
  ``n`` sealed sessions past their periods (default 1,000; ``--sessions
  10000`` for the recorded figure), once removing their content and once
  their whole graphs, against removing the same content graphs / graphs with raw
  pyoxigraph calls on a copy of the same store; compaction timed apart.
- **erase** (``bench_erase``, its own section): ``erase(principal=...)`` of one
  data subject's content across N sealed sessions (default 1,000; ``--sessions N``),
  the sealed receipt and the rewrite of the store's files included, against deleting
  the same content graphs with raw store calls (``store.clear`` per content graph,
  sessions found by the same SPARQL). Each on its own copy of the same store.

Run: ``python benchmarks/bench_compliance.py [bundle] [retention] [erase] [--sessions N]``
(or ``python benchmarks/run_all.py compliance``, which runs every part with the defaults).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import interleaved, write_section

import trails
from trails.audit.bundle import verify_bundle, write_bundle
from trails.audit.export import export as export_graphs
from trails.audit.export import export_to_path
from trails.compliance.erasure import erase
from trails.compliance.retention import RetentionPolicy
from trails.compliance.retention import apply as apply_retention
from trails.evidence import verify
from trails.evidence.seal import install_sealer
from trails.kernel import Context
from trails.prov import CapabilityInvoked, LLMCompleted, Recorder, SessionEnded, SessionStarted
from trails.prov.content import content_graph
from trails.prov.masking import NAMED_RULES, Masking
from trails.store import IRI, open_store

CUSTOMER = {
    "name": "Jane Doe",
    "email": "jane.doe@example.org",
    "phone": "+44 20 7946 0958",
    "card": "4111 1111 1111 1111",
    "note": "prefers calls after 5pm; order 1234 shipped",
}


@trails.capability(id="bench.compliance.crm", description="Returns a customer record.")
def crm(query: str) -> dict[str, str]:
    return dict(CUSTOMER, query=query)


def session(recorder: Recorder) -> IRI:
    with Context.open("did:local:bench", recorder=recorder) as ctx:
        for i in range(3):
            trails.invoke(
                "bench.compliance.crm", {"query": f"customer {i} jane.doe@example.org"}, ctx=ctx
            )
        return IRI(str(ctx.session))


def bundle_and_masking() -> None:
    n = 200
    with tempfile.TemporaryDirectory(prefix="trails-bench-compliance-") as tmp:
        root = Path(tmp)
        masked_store, plain_store = open_store(root / "masked"), open_store(root / "plain")
        masked = Recorder(masked_store, masking=Masking.named(*NAMED_RULES))
        plain = Recorder(plain_store)
        install_sealer(masked), install_sealer(plain)
        for _ in range(20):
            session(masked), session(plain)
        t_masked, t_plain = interleaved(
            lambda: session(masked), lambda: session(plain), rounds=9, number=20
        )
        masked_store.close(), plain_store.close()

        store = open_store(root / "big")
        recorder = Recorder(store)
        install_sealer(recorder)
        graphs = [session(recorder) for _ in range(n)]
        bundle = root / "b.zip"

        def make_bundle() -> None:
            write_bundle(store, bundle, graphs)

        def plain_export() -> None:
            export_to_path(
                lambda out: export_graphs(store, out, graphs, format="trig"), root / "e.trig"
            )

        make_bundle()
        report = verify_bundle(bundle)
        assert report.ok and report.graphs_checked == n, report.findings[:3]
        t_bundle, t_export = interleaved(make_bundle, plain_export, rounds=3, number=1)
        t_verify, t_export2 = interleaved(
            lambda: verify_bundle(bundle), plain_export, rounds=3, number=1
        )
        size = bundle.stat().st_size
        store.close()

    mask_ratio = t_masked / t_plain
    write_section(
        "compliance",
        f"""## Compliance: evidence bundles and PII masking (issue 18)

`python benchmarks/bench_compliance.py`, on-disk stores. A bundle holds {n} sealed
sessions (each three `invoke` calls); the baseline is a plain TriG export of the same
graphs to a file, measured in the same run. A masked session records a customer record
(e-mail, phone, card) through three `invoke` calls with all five named rules on.

| | time | ratio |
|---|---|---|
| `write_bundle`, {n} sessions | {t_bundle:.2f} s ({t_bundle / n * 1e3:.1f} ms/session, {size / 1e6:.1f} MB) | **{t_bundle / t_export:.1f}** x the TriG export |
| `verify_bundle` of it, no store | {t_verify:.2f} s ({t_verify / n * 1e3:.1f} ms/session) | **{t_verify / t_export2:.1f}** x the TriG export |
| TriG export of the same graphs (baseline) | {t_export:.2f} s | |
| session recorded with the five masking rules | {t_masked * 1e3:.2f} ms | **{mask_ratio:.2f}** x without rules |
| session recorded without rules (baseline) | {t_plain * 1e3:.2f} ms | |

A bundle does more than an export: it reads the ledger, loads the bundled graphs into a
scratch store and answers every pack query over them (once per session for the queries
that need one), and verifying recomputes those answers. Masking runs every rule on every
text the recorder writes (labels, arguments, results ...); most of its cost is the
`phonenumbers` matcher on texts that hold a candidate number (a cheap pre-check skips the
others). `trails erase` and `trails
retention apply` is not built yet, so it is not measured; `trails erase` has its own
section below.""",
    )
    print(
        f"bundle {t_bundle:.2f}s = {t_bundle / t_export:.1f}x export; verify {t_verify:.2f}s; "
        f"masking {mask_ratio:.2f}x"
    )


def old_sessions(recorder: Recorder, n: int) -> list[IRI]:
    """``n`` sealed sessions that ended two years ago, each with a completion (two values)."""
    start = datetime.now(UTC) - timedelta(days=800)
    graphs = []
    for i in range(n):
        t = start + timedelta(seconds=10 * i)
        g = recorder.minter.session(f"old-{i}")
        recorder.record(SessionStarted(session=g, principal="did:local:bench", started=t))
        recorder.record(
            LLMCompleted(
                session=g,
                activity=recorder.minter.activity(),
                parent=g,
                principal="did:local:bench",
                provider="mock",
                model="scripted",
                started=t + timedelta(seconds=1),
                ended=t + timedelta(seconds=2),
                messages=[{"role": "user", "content": f"customer question number {i}"}],
                request_hash=f"r{i}",
                text=f"the answer to customer question number {i}",
                input_tokens=12,
                output_tokens=9,
                usd=0.0001,
            )
        )
        recorder.record(SessionEnded(session=g, ended=t + timedelta(seconds=3)))
        graphs.append(g)
    return graphs


def retention(n: int) -> None:
    """``retention apply`` on ``n`` sessions vs raw pyoxigraph removals (own section)."""
    import pyoxigraph as ox

    with tempfile.TemporaryDirectory(prefix="trails-bench-retention-") as tmp:
        root = Path(tmp)
        store = open_store(root / "template")
        recorder = Recorder(store)
        install_sealer(recorder)
        t0 = time.perf_counter()
        graphs = old_sessions(recorder, n)
        t_record = time.perf_counter() - t0
        store.close()

        def copy(name: str) -> Path:
            shutil.copytree(root / "template", root / name)
            return root / name

        results: dict[str, float] = {}
        for part, table in (
            ("content", {"content_days": 365}),
            ("structure", {"structure_days": 365}),
        ):
            s = open_store(copy(f"{part}-trails"))
            rec = Recorder(s)
            install_sealer(rec)
            t0 = time.perf_counter()
            result = apply_retention(
                rec, RetentionPolicy.from_table(table), by="did:local:bench", compact=False
            )
            results[part] = time.perf_counter() - t0
            assert len(result.removed) == n, (part, len(result.removed))
            t0 = time.perf_counter()
            s.compact()  # type: ignore[attr-defined]
            results[f"{part}-compact"] = time.perf_counter() - t0
            s.close()

            s = open_store(copy(f"{part}-raw"))
            raw = s.raw  # type: ignore[attr-defined]
            t0 = time.perf_counter()
            for g in graphs:
                node = ox.NamedNode(g)
                if part == "structure":
                    raw.remove_graph(node)
                else:  # the content graph holds the values; the digests stay in the graph
                    raw.remove_graph(ox.NamedNode(str(content_graph(g))))
            results[f"{part}-raw"] = time.perf_counter() - t0
            del raw  # the pyoxigraph store closes with its last reference
            s.close()

    lines = []
    for part, what in (
        ("content", "content (two values each, through the erasure API)"),
        ("structure", "whole graphs"),
    ):
        t, raw_t, c = results[part], results[f"{part}-raw"], results[f"{part}-compact"]
        lines.append(
            f"| `retention apply`, {what} | {t:.2f} s ({t / n * 1e3:.2f} ms/session) "
            f"| **{t / raw_t:.1f}** x raw |"
        )
        lines.append(
            f"| raw pyoxigraph removal of the same (baseline) | {raw_t:.2f} s "
            f"({raw_t / n * 1e3:.3f} ms/session) | |"
        )
        lines.append(f"| compaction after it (store rewrite) | {c:.2f} s | |")
    table = "\n".join(lines)
    write_section(
        "retention",
        f"""## Retention: `trails retention apply` (issue 18)

`python benchmarks/bench_compliance.py retention --sessions {n}`, on-disk stores. {n} sealed
sessions that ended two years ago (each a start, one completion with prompt and answer,
an end; recorded in {t_record:.0f} s), copied once per measurement. Content retention
erases each session's two values (prompt and answer) through the erasure API: its
content graph is emptied, and a sealed erasure receipt lists every digest; no seal of a
session is revised. Structure retention drops each graph, its content graph and its
catalogue entry (its seals stay in the ledger). Both first record and seal the run with
one removal entity per session. The baseline drops the same content graphs or graphs
(`Store.remove_graph`) with raw pyoxigraph calls on a copy of the same store.

| | time | ratio |
|---|---|---|
{table}

Compaction rewrites the store (a bulk copy of its quads into a fresh directory, swapped in): RocksDB
compaction alone leaves removed strings in its string table, so it is the price of
removed text not surviving in the files, paid once per run, not per session.

Against a bare graph drop, trails pays for the evidence: the retention run's sealed record
(one removal entity per session), the erasure receipt (each erased value's digest,
invalidated by the erasure) and the plan's queries. A graph drop also looks up and removes
the session's catalogue entry.""",
    )
    print(" ".join(f"{k}={v:.2f}s" for k, v in results.items()))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("parts", nargs="*", help="bundle, retention, erase (default: all)")
    parser.add_argument(
        "--sessions", type=int, default=1000, help="sessions for retention and erase (default 1000)"
    )
    args = parser.parse_args(argv)
    known = {"bundle", "retention", "erase"}
    parts = args.parts or sorted(known)
    if set(parts) - known:
        parser.error(f"unknown parts {sorted(set(parts) - known)}")
    if "bundle" in parts:
        bundle_and_masking()
    if "retention" in parts:
        retention(args.sessions)
    if "erase" in parts:
        bench_erase(args.sessions)


SUBJECT = "did:example:subject"


def erased_session(recorder: Recorder, i: int) -> None:
    """A sealed session of the data subject: a completion and an invocation (4 content values)."""
    now = datetime.now
    s = recorder.minter.session()
    recorder.record(SessionStarted(session=s, principal=SUBJECT, started=now(UTC)))
    a, c = recorder.minter.activity(), recorder.minter.activity()
    recorder.record(
        LLMCompleted(
            session=s,
            activity=a,
            parent=s,
            principal=SUBJECT,
            provider="scripted",
            model="m",
            started=now(UTC),
            ended=now(UTC),
            messages=[{"role": "user", "content": f"my account number is {i:08d}, help"}],
            request_hash=f"h{i}",
            text=f"Your account {i:08d} shows two payments this month.",
        )
    )
    recorder.record(
        CapabilityInvoked(
            session=s,
            activity=c,
            parent=a,
            principal=SUBJECT,
            capability_id="crm.lookup",
            started=now(UTC),
            ended=now(UTC),
            status="ok",
            inputs={"account": f"{i:08d}"},
            output=dict(CUSTOMER, account=f"{i:08d}"),
        )
    )
    recorder.record(SessionEnded(session=s, ended=now(UTC)))


_OF_SUBJECT = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?g $id WHERE { GRAPH ?g { ?g a trails:Session ; prov:wasAssociatedWith/trails:principalId $id } }
"""


def bench_erase(n: int) -> None:
    """``erase`` of one subject across ``n`` sessions vs raw deletion of the same content."""
    from trails.store import Literal

    with tempfile.TemporaryDirectory(prefix="trails-bench-erase-") as tmp:
        root = Path(tmp)
        store = open_store(root / "base")
        recorder = Recorder(store)
        install_sealer(recorder)
        t0 = time.perf_counter()
        for i in range(n):
            erased_session(recorder, i)
        t_record = time.perf_counter() - t0
        store.close()
        for name in ("erase", "nocompact", "raw"):
            shutil.copytree(root / "base", root / name)

        def timed_erase(name: str, compact: bool) -> tuple[float, int, bool]:
            st = open_store(root / name)
            rec = Recorder(st)
            install_sealer(rec)
            t = time.perf_counter()
            receipt = erase(rec, principal=SUBJECT, reason="bench", by="did:x", compact=compact)
            elapsed = time.perf_counter() - t
            ok = verify(st).ok
            st.close()
            return elapsed, receipt.erased, ok

        t_erase, erased, ok = timed_erase("erase", True)
        t_nocompact, _, ok2 = timed_erase("nocompact", False)
        st = open_store(root / "raw")
        t = time.perf_counter()
        rows = st.query(_OF_SUBJECT, {"id": Literal(SUBJECT)})
        for row in rows:  # type: ignore[union-attr]
            st.clear(content_graph(str(row["g"])))
        t_raw = time.perf_counter() - t
        st.close()
        assert ok and ok2 and erased == 4 * n, (ok, ok2, erased)

    write_section(
        "compliance_erase",
        f"""## Compliance: `trails erase` (issue 18)

`python benchmarks/bench_compliance.py erase --sessions {n}`, on-disk store. One data
subject's {n:,} sealed sessions (a completion and a capability invocation each: 4
content values, {erased:,} in all) recorded through the recorder ({t_record:.0f} s), then the
store copied three times. `erase(recorder, principal=...)` finds the sessions (and
memories), checks legal holds, reads each content graph with the digests, removes the
content and writes the receipt in batches of 2,000 values (each batch one atomic write),
seals the receipt, and rewrites the store's files so the erased text is gone from disk.
The baseline deletes the same content graphs with raw store calls (the same SPARQL to
find the sessions, then `store.clear` of each content graph): no holds, no receipt, no
seal, and the text left in the files. `trails verify` passes after each erasure.

| | time | per session | ratio |
|---|---|---|---|
| `erase`, receipt sealed, store files rewritten | {t_erase:.2f} s | {t_erase / n * 1e3:.2f} ms | **{t_erase / t_raw:.1f}x** raw |
| `erase`, without rewriting the files (`--no-compact`) | {t_nocompact:.2f} s | {t_nocompact / n * 1e3:.2f} ms | **{t_nocompact / t_raw:.1f}x** raw |
| raw deletion of the same content graphs (baseline) | {t_raw:.2f} s | {t_raw / n * 1e3:.3f} ms | |

The rewrite of the files is a copy of everything the store holds (a bulk load into a new
directory, swapped in): its cost grows with the store, not with what was erased, so erase
many subjects with `compact=False` and call `store.compact()` once at the end (a
retention run can do the same). The rest is reading each content graph with its digests (one query
per session) and writing the receipt: four quads per erased value.""",
    )
    print(
        f"erase {n}: {t_erase:.2f}s ({t_erase / t_raw:.1f}x raw); no compaction {t_nocompact:.2f}s"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
