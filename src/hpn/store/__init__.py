"""The run store: one folder per run (config TOML, result JSON, Parquet tables, plots),
indexed in SQLite; see :func:`record_run` and :class:`Run`."""

from hpn.store.index import Index
from hpn.store.paths import runs_root
from hpn.store.record import record_run
from hpn.store.run import Run, open_run
from hpn.store.runnable import Outcome, register

__all__ = ["Index", "Outcome", "Run", "open_run", "record_run", "register", "runs_root"]
