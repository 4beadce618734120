"""Request by request against the authors' simulator's output: matching and exact counts."""

from __future__ import annotations

import pytest

from hpn.errors import InputError
from hpn.pool.requests import Request
from hpn.pool.validate_requests import compare, read_requests, reference_file

HEAD = (
    "req_id,model,arrival_ms,input_len,output_len,state,"
    "first_token_ms,last_token_ms,tokens,token_ms\n"
)


def _ours(rid, model, arrival, inp, out, first=-1.0, failed=False):
    r = Request(rid, model, arrival, inp, out, 10.0, 0.1)
    r.first_t, r.failed = first, failed
    return r


def _write(tmp_path, rows):
    p = tmp_path / "synth-2-0.1-1.0-1.0.requests.csv"
    p.write_text(HEAD + "".join(rows))
    return p


def test_counts_by_hand(tmp_path):
    p = _write(
        tmp_path,
        [
            "0,ModelType.m0,1000,10,2,FINISHED,1500,1600,2,1500 1600\n",  # agrees (0.2 s apart)
            "1,ModelType.m0,2000,10,2,FAILED,,,0,\n",  # failed on both sides
            "2,ModelType.m1,3000,20,2,FAILED,,,0,\n",  # only the reference fails it
            "3,ModelType.m1,4000,20,2,FINISHED,4100,4200,2,4100 4200\n",  # we fail it
            "4,ModelType.m1,5000,20,2,FINISHED,5100,5200,2,5100 5200\n",  # 3 s apart
            "5,ModelType.m1,9000,20,2,FINISHED,9100,9200,2,9100 9200\n",  # nobody of ours
        ],
    )
    refs = read_requests(p)
    assert refs[0]["model"] == "m0" and refs[0]["token_ms"] == [1500, 1600]
    ours = [
        _ours(0, "m0", 1.0, 10, 2, first=1.7),
        _ours(1, "m0", 2.0, 10, 2, failed=True),
        _ours(2, "m1", 3.0, 20, 2, first=3.1),
        _ours(3, "m1", 4.0, 20, 2, failed=True),
        _ours(4, "m1", 5.0, 20, 2, first=8.1),
        _ours(5, "m1", 6.0, 20, 2, first=6.1),  # no partner (arrival differs)
    ]
    d = compare(ours, refs, 10.0, 0.1)
    assert d["matched"] == 5 and d["unmatched"] == 2
    assert (d["failed_both"], d["failed_only_ours"], d["failed_only_reference"]) == (1, 1, 1)
    assert d["differing"] == 3  # two failure mismatches and one first token 3 s off
    assert d["ttft_mean_abs_diff_s"] == pytest.approx((0.2 + 3.0) / 2)
    # the reference's own attainment: 4 finished, on time, of 6 requests (failed score 0)
    assert d["reference_attainment"] == pytest.approx(100 * 4 / 6, abs=0.01)


def test_reference_file_and_bad_rows(tmp_path):
    p = _write(tmp_path, ["0,m0,1000,10,2,FINISHED,1500,1600,2,1500 1600\n"])
    assert reference_file(tmp_path, "synth-2-0.1-1.0-1.0.csv") == p
    assert reference_file(tmp_path, "other.csv") is None
    assert reference_file(tmp_path, "synth-2-0.1-1.0-1.0.csv", "aegaeon") is None
    mix = tmp_path / "synth-2-0.1-1.0-1.0.aegaeon.requests.csv"
    mix.write_text(p.read_text())
    assert reference_file(tmp_path, "synth-2-0.1-1.0-1.0.csv", "aegaeon") == mix
    own = tmp_path / "synth-2-0.1-1.0-1.0.serverless-artifact.requests.csv"
    own.write_text(p.read_text())  # the policy's own name first
    assert reference_file(tmp_path, "synth-2-0.1-1.0-1.0.csv") == own
    bad = tmp_path / "b.requests.csv"
    bad.write_text("req_id,model\n0,m0\n")
    with pytest.raises(InputError, match="missing columns"):
        read_requests(bad)
    bad.write_text(HEAD + "0,m0,soon,10,2,FINISHED,1500,1600,2,\n")
    with pytest.raises(InputError, match=r"b.requests.csv:2"):
        read_requests(bad)
