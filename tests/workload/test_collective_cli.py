"""`hpn collective` end to end."""

import pytest

from tests.conftest import assert_input_error, run_cli


def test_collective_json_and_table():
    r = run_cli(
        "collective",
        "--preset",
        "hpn",
        "--segments",
        "1",
        "--gpus",
        "32",
        "--sizes",
        "1M,1G",
        "--routing",
        "hpn",
        "--json",
    )
    assert r.code == 0, r.err
    out = r.json()
    assert [x["size_bytes"] for x in out["results"]] == [2**20, 2**30]
    for row in out["results"]:
        assert set(row) >= {"size_bytes", "time_s", "algbw_GBps", "busbw_GBps"}
        assert row["busbw_GBps"] == pytest.approx(row["algbw_GBps"] * 2 * 31 / 32)
    assert out["results"][1]["busbw_GBps"] > out["results"][0]["busbw_GBps"]
    r = run_cli(
        "collective",
        "--preset",
        "dcn-plus",
        "--gpus",
        "64",
        "--op",
        "multi-allreduce",
        "--sizes",
        "64M",
        "--jobs",
        "2",
    )
    assert r.code == 0, r.err
    assert "busbw (GB/s)" in r.out and "64MiB" in r.out


@pytest.mark.parametrize(
    "args,fragments",
    [
        (["--op", "gather"], ["op", "allreduce"]),
        (["--op", "allgather", "--algo", "tree"], ["algo", "ring"]),
        (["--gpus", "100000"], ["gpus"]),
        (["--sizes", "1M,-4M"], ["--sizes"]),
        (["--routing", "magic"], ["routing"]),
        (["--conns", "0"], ["conns"]),
        (["--algo", "hd", "--gpus", "24"], ["power-of-two"]),
    ],
)
def test_collective_refusals(args, fragments):
    r = run_cli("collective", "--preset", "hpn", "--segments", "1", "--gpus", "16", *args)
    assert_input_error(r, *fragments)
