"""Pool inputs refused at once: header-only traces, absurd token counts, GPU counts that
do not add up."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpn.errors import InputError
from hpn.pool.simulate import simulate
from hpn.pool.traces.aegaeon import read_aegaeon
from hpn.pool.traces.azure import read_azure

FIX = Path(__file__).parent / "fixtures"


def _head(name: str) -> str:
    return (FIX / name).read_text().splitlines()[0] + "\n"


@pytest.mark.parametrize(
    "name, read", [("aegaeon_small.csv", read_aegaeon), ("azure_small.csv", read_azure)]
)
def test_header_only_trace_is_refused(tmp_path: Path, name: str, read):
    f = tmp_path / name
    f.write_text(_head(name))
    with pytest.raises(InputError, match=r"no requests \(the file has only its header\)"):
        read(f)


def test_absurd_token_counts_are_refused_with_the_line(tmp_path: Path):
    f = tmp_path / "t.csv"
    lines = (FIX / "aegaeon_small.csv").read_text().splitlines()
    cols = lines[1].split(",")
    cols[2] = "100000000"
    f.write_text("\n".join([lines[0], ",".join(cols)]) + "\n")
    with pytest.raises(
        InputError, match=r"t\.csv:2: column 'Input Length': must be in 1\.\.1,048,576"
    ):
        read_aegaeon(f)


@pytest.fixture(scope="module")
def trace():
    return read_aegaeon(FIX / "aegaeon_small.csv")


@pytest.mark.parametrize(
    "kw, field, says",
    [
        ({"gpus": 16, "prefill_gpus": 6, "decode_gpus": 4}, "gpus", "16 is not prefill_gpus"),
        ({"prefill_gpus": 6}, "prefill_gpus", "give both"),
        ({"gpus": 8, "decode_gpus": 4}, "decode_gpus", "give both"),
        ({"gpus": 0}, "gpus", "needs at least 2"),
        ({"gpus": 1}, "gpus", "needs at least 2"),
    ],
)
def test_gpu_counts_must_add_up(trace, kw, field, says):
    with pytest.raises(InputError, match=f"^{field}: .*{says}"):
        simulate(trace, "aegaeon", **kw)
