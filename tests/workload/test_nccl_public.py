"""The public nccl-tests records (bench/data/nccl_public.toml) and the tuner port against
NCCL's own logged predictions."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from hpn.workload.collectives import tuning as tu

DATA = Path(__file__).parents[2] / "bench" / "data" / "nccl_public.toml"


@pytest.fixture(scope="module")
def data() -> dict:
    return tomllib.loads(DATA.read_text())


def test_records_are_transcribed_consistently(data):
    """nccl-tests prints busbw = size / time x 2(n-1)/n: every transcribed row with a busbw
    of at least 0.1 GB/s agrees with its own size and time to the printed rounding."""
    checked = 0
    for rec in data["record"]:
        assert rec["url"].startswith("https://github.com/")
        n = rec["hosts"] * rec["gpus_per_host"]
        for size, t_us, bus in rec["rows"]:
            if bus < 0.1:
                continue
            expect = size / (t_us * 1e3) * 2 * (n - 1) / n
            assert expect == pytest.approx(bus, rel=0.005, abs=0.006), (rec["id"], size)
            checked += 1
    assert checked >= 20


def test_tree_ll_latency_and_correction_match_nccl_log(data):
    """NCCL 2.22.3 logged Tree LL times for 64 B, 4 KiB and 8 KiB on 3 hosts x 8 H100
    (NVIDIA/nccl#1453). With the port's latency (6.8 + 2 (7 x 0.6 + log2(3) x 5.0) = 25.2 us)
    and its tree correction factors (1.0 at 64 B, 0.7 at 4 and 8 KiB), one bandwidth fits all
    three logged times to 1e-4 us."""
    log = data["tuner_log"][0]
    c = tu.Comm(24, 3, tu.GPUS.get("H100"), 50.0)
    k = tu.cost(c, "allreduce", tu.TREE, tu.LL)
    assert k is not None
    assert k.lat == pytest.approx(25.2, abs=1e-9)
    times = {int(s): t for s, a, p, t in log["logs"] if (a, p) == (0, 0)}
    bw = 64 / (1000 * (times[64] - k.lat))  # GB/s, the one unknown
    for size in (4096, 8192):
        f = tu.correction("allreduce", tu.TREE, tu.LL, size)
        assert f == 0.7
        assert k.lat + size / (1000 * bw * f) == pytest.approx(times[size], abs=1e-4)


def test_both_releases_share_the_tree_ll_latency():
    """2.18.3 and 2.30.7 have the same Tree LL base and hop latencies (6.8; 0.6, 5.0 us)."""
    for v in ("2.18.3", "2.30.7"):
        c = tu.Comm(24, 3, tu.GPUS.get("H100"), 50.0, nccl=tu.VERSIONS.get(v))
        k = tu.cost(c, "allreduce", tu.TREE, tu.LL)
        assert k is not None and k.lat == pytest.approx(25.2, abs=1e-9)
