"""Hash functions bit-exact against the standard library; linearity, the cause of polarization."""

import binascii
import zlib

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hpn.routing.hashing import (
    TupleBytes,
    crc16_arc,
    crc16_ccitt,
    crc32,
    crc32c,
    fold16,
    linux_bond_l34,
    mix64,
    pack_5tuples,
    xor16,
)

CHECK = np.frombuffer(b"123456789", np.uint8)[None, :]


def test_catalogue_check_values():
    assert crc32(CHECK)[0] == 0xCBF43926
    assert crc32c(CHECK)[0] == 0xE3069283
    assert crc16_arc(CHECK)[0] == 0xBB3D
    assert crc16_ccitt(CHECK)[0] == 0x29B1  # CRC-16/CCITT-FALSE


rows = st.lists(st.binary(min_size=13, max_size=13), min_size=1, max_size=40)


@settings(max_examples=50)
@given(rows, st.integers(0, 2**32 - 1))
def test_crc32_matches_zlib(data, seed):
    arr = np.frombuffer(b"".join(data), np.uint8).reshape(len(data), 13)
    got = crc32(arr, seed)
    assert [int(x) for x in got] == [zlib.crc32(d, seed) for d in data]


@settings(max_examples=50)
@given(rows, st.integers(0, 2**16 - 1))
def test_crc16_matches_binascii(data, seed):
    arr = np.frombuffer(b"".join(data), np.uint8).reshape(len(data), 13)
    assert [int(x) for x in crc16_ccitt(arr, seed)] == [binascii.crc_hqx(d, seed) for d in data]


@settings(max_examples=30)
@given(
    st.lists(
        st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1), st.integers(0, 65535)),
        min_size=1,
        max_size=30,
    )
)
def test_lazy_tuple_bytes_equal_packed_rows(tuples):
    s, d, p = (np.array(x, np.uint32) for x in zip(*tuples, strict=True))
    packed = pack_5tuples(s, d, p, 4791)
    lazy = TupleBytes(s, d, p, 4791)
    assert np.array_equal(lazy.rows(), packed)
    assert np.array_equal(crc32(lazy), crc32(packed))
    for i, (a, b, c) in enumerate(tuples):
        raw = a.to_bytes(4, "big") + b.to_bytes(4, "big") + bytes([17]) + c.to_bytes(2, "big")
        assert packed[i].tobytes() == raw + (4791).to_bytes(2, "big")


def test_seed_only_xors_a_constant_into_a_crc():
    """CRC is affine in its initial value: two seeds differ by one constant for every input,
    so the parity (and any mod 2^k) of two seeded CRCs is perfectly correlated."""
    rng = np.random.default_rng(1)
    data = rng.integers(0, 256, (500, 13), dtype=np.uint8)
    diff = crc32(data, 0x1234) ^ crc32(data, 0xBEEF)
    assert len(np.unique(diff)) == 1
    # the non-linear mix64 has no such constant
    assert len(np.unique(mix64(data, 0x1234) ^ mix64(data, 0xBEEF))) > 400


def test_xor16_and_fold():
    data = np.array([[0x12, 0x34, 0x56, 0x78]], np.uint8)
    assert xor16(data)[0] == 0x1234 ^ 0x5678
    assert fold16(np.array([0xABCD1234], np.uint32))[0] == 0xABCD ^ 0x1234


def test_linux_bond_layer34_follows_its_documented_steps():
    s, d, sp, dp = 0x0A000001, 0x0A000102, 50000, 4791
    h = (sp ^ dp) ^ (s ^ d)
    h ^= h >> 16
    h ^= h >> 8
    got = linux_bond_l34(np.array([s], np.uint32), np.array([d], np.uint32), sp, dp)
    assert int(got[0]) == h


@settings(max_examples=50)
@given(st.integers(0, 0xFFFF), st.integers(0, 15))
def test_rotate16_is_a_16_bit_rotation(h, off):
    from hpn.routing.hashing import rotate16

    want = ((h >> off) | (h << (16 - off))) & 0xFFFF
    got = int(rotate16(np.array([h], np.uint32), off)[0])
    assert got == want
    assert int(rotate16(np.array([got], np.uint32), (16 - off) % 16)[0]) == h


def test_an_offset_decorrelates_two_seeded_crcs():
    """Low 4 bits at one tier, bits 10..13 at the next: independent choices out of one CRC."""
    from hpn.routing.hashing import rotate16

    rng = np.random.default_rng(2)
    data = rng.integers(0, 256, (4000, 13), dtype=np.uint8)
    a = fold16(crc32(data, 1)) % 16
    same = fold16(crc32(data, 2)) % 16
    rotated = rotate16(fold16(crc32(data, 2)), 10) % 16
    joint = lambda x, y: len(np.unique(x.astype(np.int64) * 16 + y))  # noqa: E731
    assert joint(a, same) == 16  # a bijection: 16 of 256 combinations
    assert joint(a, rotated) == 256
