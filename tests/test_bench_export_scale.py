"""The whole-store export benchmark's logic: what it measures runs, and what it calls a regression.

No timing is asserted here: ``benchmarks/bench_export_scale.py --check`` measures, and fails
the benchmark (never a unit test) when a figure misses its target by more than the noise.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_export_scale as bench

from trails.evidence.seal import install_sealer
from trails.prov import Recorder
from trails.store import open_store
from trails.testing.conformance import record_sample_session


def _figures(
    growth: float, throughput: float, rss: float
) -> dict[int, dict[str, dict[str, float]]]:
    """Figures at 1k, 2k, 4k: each format's CPU times ``growth`` per doubling, N-Quads and
    TriG at ``throughput`` of the dump, peak memory times ``rss`` from first to last."""
    out: dict[int, dict[str, dict[str, float]]] = {}
    for i, size in enumerate((1000, 2000, 4000)):
        row = {f: {"cpu": 2.0 * 2**i, "rss_mib": 100.0} for f in bench.BASELINES}
        for f in bench.FORMATS:
            row[f] = {
                "cpu": 2.0 / throughput * growth**i,
                "rss_mib": 100.0 * (1 + (rss - 1) * i / 2),
            }
        out[size] = row
    return out


def test_linear_exports_at_the_dumps_speed_in_flat_memory_pass() -> None:
    assert bench.problems([1000, 2000, 4000], _figures(2.0, 1.0, 1.1)) == []
    assert bench.problems([1000, 2000, 4000], _figures(2.2 * 1.2, 1.0, 1.1)) == []  # noise


def test_quadratic_growth_is_a_regression_in_every_format() -> None:
    found = bench.problems([1000, 2000, 4000], _figures(4.0, 1.0, 1.0))
    assert len([line for line in found if " from " in line]) == 2 * len(bench.FORMATS)
    assert any(line.startswith("trig: 4.00x from 1,000 to 2,000") for line in found)


def test_a_slow_export_or_growing_memory_is_a_regression() -> None:
    slow = bench.problems([1000, 2000, 4000], _figures(2.0, 0.2, 1.0))
    assert any(line.startswith("nquads: 0.20x of the raw dump") for line in slow)
    assert any(line.startswith("trig: 0.20x of the raw dump") for line in slow)
    grows = bench.problems([1000, 2000, 4000], _figures(2.0, 1.0, 3.0))
    assert len(grows) == len(bench.FORMATS) and "peak memory 3.00x" in grows[0]


def test_the_table_shows_each_doubling_and_the_dump_ratios() -> None:
    text = bench.table([1000, 2000, 4000], _figures(2.0, 0.5, 1.0))
    assert "| trig | 4.00 s | 8.00 s | 16.00 s | 2.00x, 2.00x | 100 → 100 MiB |" in text
    assert "| nquads (target 0.5x) | 0.50x | 0.50x | 0.50x |" in text


def test_sizes_that_do_not_double_show_their_growth_per_doubling() -> None:
    figures = _figures(2.0, 0.5, 1.0)
    two = {1000: figures[1000], 4000: figures[4000]}  # 4x apart: two doublings, 4x the CPU
    assert "| trig | 4.00 s | 16.00 s | 2.00x | 100 → 100 MiB |" in bench.table([1000, 4000], two)
    assert f"{bench.per_doubling(10.0, 25.0, 2.5):.2f}" == "2.00"  # linear, 2.5x apart


@pytest.mark.parametrize("what", [*bench.BASELINES, *bench.FORMATS])
def test_each_measurement_runs_on_a_real_store(tmp_path: Path, what: str) -> None:
    path = tmp_path / "store"
    store = open_store(str(path))
    record_sample_session(Recorder(store))
    store.close()
    figure = bench.one(path, what)
    assert figure["cpu"] > 0 and figure["rss_mib"] > 10 and figure["bytes"] > 1000


def test_a_bundles_memory_counts_over_the_stores_own_growth_for_a_second_store() -> None:
    def grown(base: float, bundle: float, nquads: float) -> list[str]:
        fig = _figures(2.0, 1.0, 1.0)
        fig[4000][bench.RELOAD]["rss_mib"] = 100.0 * base
        fig[4000]["bundle"]["rss_mib"] = 100.0 * bundle
        fig[4000]["verify-bundle"]["rss_mib"] = 100.0 * bundle
        fig[4000]["nquads"]["rss_mib"] = 100.0 * nquads
        return bench.problems([1000, 2000, 4000], fig)

    assert grown(1.4, 1.8, 1.0) == []  # 1.29x of what the store itself grew
    found = grown(1.4, 3.0, 2.0)  # 2.14x of it; an export that loads nothing, 2.0x
    assert sorted(line.split(":")[0] for line in found) == ["bundle", "nquads", "verify-bundle"]
    assert "peak memory 2.14x" in found[0] or "peak memory 2.14x" in found[-1]


def test_the_ledger_read_benchmark_reads_the_same_seals_both_ways(tmp_path: Path) -> None:
    import bench_ledger_read

    path = tmp_path / "store"
    store = open_store(str(path))
    recorder = Recorder(store)
    install_sealer(recorder)
    record_sample_session(recorder)
    store.close()
    got = bench_ledger_read.measure(path, rounds=1)
    assert got["seals"] >= 1 and got["whole"] > 0 and got["by subject"] > 0
