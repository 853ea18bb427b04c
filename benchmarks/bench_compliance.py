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

Erasure and retention are not built yet, so they are not measured here.

Run: ``python benchmarks/bench_compliance.py`` (or ``python benchmarks/run_all.py compliance``).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import interleaved, write_section

import trails
from trails.audit.bundle import verify_bundle, write_bundle
from trails.audit.export import export as export_graphs
from trails.audit.export import export_to_path
from trails.audit.seal import install_sealer
from trails.kernel import Context
from trails.prov import Recorder
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


def main() -> None:
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
retention apply` are not built yet, so they are not measured.""",
    )
    print(
        f"bundle {t_bundle:.2f}s = {t_bundle / t_export:.1f}x export; verify {t_verify:.2f}s; "
        f"masking {mask_ratio:.2f}x"
    )


if __name__ == "__main__":
    main()
