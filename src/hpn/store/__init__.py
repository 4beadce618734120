"""The run store: one folder per run (config TOML, result JSON, Parquet tables, plots),
indexed in SQLite; see :func:`record_run` (:func:`record_outcome` for a command's outcome)
and :class:`Run`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hpn.lazy import lazy_getattr

if TYPE_CHECKING:
    from hpn.store.index import Index
    from hpn.store.paths import runs_root
    from hpn.store.record import check_folder, record_outcome, record_run
    from hpn.store.run import Run, open_run

__all__ = ["Index", "Run", "check_folder", "open_run", "record_outcome", "record_run", "runs_root"]
_HOME = {
    "check_folder": "hpn.store.record",
    "Index": "hpn.store.index",
    "runs_root": "hpn.store.paths",
    "record_outcome": "hpn.store.record",
    "record_run": "hpn.store.record",
    "Run": "hpn.store.run",
    "open_run": "hpn.store.run",
}


__getattr__ = lazy_getattr(__name__, _HOME)  # on first use: importing the package stays cheap
