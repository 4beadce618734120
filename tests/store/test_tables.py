"""Writing tables: what is read back is what a plain write of the same columns gives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hpn.store.tables import DICTIONARY_PAGE_BYTES, read_table, write_table

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def _columns(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "link_id": np.arange(n, dtype=np.int64) * 3,
        "distinct": rng.random(n),  # past the dictionary page: plain-encoded
        "few": rng.choice([1.0, 2.5, 4.0], n),  # stays dictionary-encoded
        "tier": np.array(["nvlink", "nic_tor", "tor_agg"])[rng.integers(0, 3, n)],
    }


def test_reads_back_as_a_default_parquet_write(tmp_path: Path):
    cols = _columns(50_000)
    ours = write_table(tmp_path, "links", cols)
    plain = tmp_path / "plain.parquet"
    pq.write_table(pa.table(cols), plain)
    a, b = pq.read_table(ours), pq.read_table(plain)
    assert a.schema.equals(b.schema, check_metadata=True) and a.equals(b)
    for name, col in read_table(ours).items():
        assert np.array_equal(col, read_table(plain)[name])
    # the dictionary page limit took effect: the distinct floats fell back to plain pages
    # after a small dictionary, the few values stayed in one
    meta = pq.ParquetFile(ours).metadata.row_group(0)
    by_name = {meta.column(i).path_in_schema: meta.column(i) for i in range(meta.num_columns)}
    assert by_name["few"].dictionary_page_offset is not None
    distinct = by_name["distinct"]
    dictionary_bytes = distinct.data_page_offset - distinct.dictionary_page_offset
    assert dictionary_bytes <= 2 * DICTIONARY_PAGE_BYTES < 50_000 * 8  # not all 50 k values


def test_without_pyarrow_tables_are_json(tmp_path: Path, monkeypatch):
    import hpn.store.tables as tables

    monkeypatch.setattr(tables, "have_arrow", lambda: False)
    path = write_table(tmp_path, "a", {"tier": np.array(["y", "x"]), "n": np.array([1, 2])})
    assert path.suffix == ".json"
    back = read_table(path)
    assert list(back["tier"]) == ["y", "x"] and list(back["n"]) == [1, 2]


def test_a_labels_column_is_stored_as_its_strings(tmp_path: Path):
    from hpn.store.tables import Labels

    rng = np.random.default_rng(3)
    names = np.array(["nvlink", "nic_tor", "tor_agg", "unused"])
    codes = rng.integers(0, 3, 20_000).astype(np.int8)
    ours = write_table(tmp_path, "links", {"n": np.arange(20_000), "tier": Labels(codes, names)})
    plain = write_table(tmp_path, "plain", {"n": np.arange(20_000), "tier": names[codes]})
    a, b = pq.read_table(ours), pq.read_table(plain)
    assert a.schema.equals(b.schema, check_metadata=True) and a.equals(b)
    assert a.schema.field("tier").type == pa.string()
    assert read_table(ours)["tier"].tolist() == names[codes].tolist()


def test_a_labels_column_without_pyarrow(tmp_path: Path, monkeypatch):
    import hpn.store.tables as tables

    monkeypatch.setattr(tables, "have_arrow", lambda: False)
    col = tables.Labels(np.array([2, 0]), np.array(["a", "b", "c"]))
    back = read_table(write_table(tmp_path, "t", {"tier": col}))
    assert list(back["tier"]) == ["c", "a"]
