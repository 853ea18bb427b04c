"""What a witness costs a checkpoint: cosigning against making the checkpoint.

A log of 10,000 synthetic seals (``bench_transparency.synthetic_seals``) is signed; then,
for each of 30 rounds, 10 new seals are appended and

- **checkpoint**: ``extend_log`` from the chain tip (the new leaves read one by one, the
  root, the signed C2SP checkpoint) written in one write, as a verification checkpoint does;
- **cosign**: ``witness_newest`` asks one witness (``trails witness serve``'s own
  ``Witness`` behind its HTTP server, in a thread of this process, on loopback) to cosign
  that checkpoint: the consistency proof from the size it cosigned last, the request, the
  witness's signature check, proof check, durable state write (fsync) and cosignature,
  the client's check of the answer, and the line written on the head.

Both are CPU seconds of this one process (client and witness together), medians over the
rounds; the wall-clock latency of a cosignature (which includes the witness's fsync) is
given for context. The ratio cosign/checkpoint is the figure to watch.

Run: ``python benchmarks/bench_witness.py [LEAVES]`` (default 10,000).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import write_section
from bench_transparency import synthetic_seals
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from trails.evidence.cosign import Cosigner
from trails.evidence.transparency import extend_log, log_iri, log_origin, read_head
from trails.evidence.witness import LogKey, Witness
from trails.evidence.witnessing import WitnessConfig, witness_newest
from trails.prov import Minter, Recorder
from trails.server.witness import make_server
from trails.store import open_store

ROUNDS, NEW = 30, 10


def _raw(key: Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def measure(n: int) -> dict[str, float]:
    log_key, witness_key = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    minter = Minter()
    origin = log_origin(log_iri(minter))
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(Path(tmp) / "store")
        witness = Witness(Path(tmp) / "witness", "witness.bench", witness_key,
                          [LogKey(origin, origin, _raw(log_key))])  # fmt: skip
        server = make_server(witness, "127.0.0.1", 0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}"
        config = [WitnessConfig(url, Cosigner("witness.bench", _raw(witness_key)))]
        try:
            recorder = Recorder(store)
            synthetic_seals(store, n)
            event, old = extend_log(store, minter, signing_key=log_key)
            recorder.record(event, remove=old)
            assert witness_newest(recorder, config)[0].line  # the first, from 0
            made, cosigned, latency = [], [], []
            for r in range(ROUNDS):
                tip = synthetic_seals(store, NEW, first=n + r * NEW)[-1]
                began = time.process_time()
                event, old = extend_log(store, minter, signing_key=log_key, tips=[tip])
                recorder.record(event, remove=old)
                made.append(time.process_time() - began)
                began, wall = time.process_time(), time.perf_counter()
                outcome = witness_newest(recorder, config)[0]
                cosigned.append(time.process_time() - began)
                latency.append(time.perf_counter() - wall)
                assert outcome.line is not None, outcome.message
            head = read_head(store, log_iri(minter))
            assert head is not None and head.size == n + ROUNDS * NEW and head.cosignatures
        finally:
            server.shutdown()
            server.server_close()
            witness.close()
            store.close()
    return {
        "checkpoint_ms": statistics.median(made) * 1e3,
        "cosign_ms": statistics.median(cosigned) * 1e3,
        "latency_ms": statistics.median(latency) * 1e3,
    }


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    f = measure(n)
    ratio = f["cosign_ms"] / f["checkpoint_ms"]
    table = f"""## Witnesses: cosigning a checkpoint against making it

`python benchmarks/bench_witness.py` (a log of {n:,} leaves, {NEW} new leaves a round,
median of {ROUNDS} rounds, CPU of one process: client and witness together):

| figure | value |
| --- | --- |
| make a checkpoint (new leaves, root, signed C2SP checkpoint, one write) | {f["checkpoint_ms"]:.2f} ms |
| have it cosigned by one witness (proof, request, checks, state fsync, line kept) | {f["cosign_ms"]:.2f} ms |
| cosign / checkpoint | {ratio:.2f}x |
| wall-clock latency of a cosignature on loopback (context) | {f["latency_ms"]:.2f} ms |
"""
    print(table)
    write_section("witness", table)


if __name__ == "__main__":
    main()
