"""What the dashboard's routers share: the store, its index, the jobs, the ``data`` folder."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fastapi import HTTPException

from hpn.store import Index, Run
from hpn.store.run import META
from hpn.web.jobs import Jobs


@dataclass
class Site:
    """The dashboard over one store: its folder, index and jobs, and the folder job configs
    may name files in (None: no files)."""

    root: Path
    index: Index
    jobs: Jobs
    data: Path | None = None

    def run_of(self, run_id: str) -> Run:
        """The run ``run_id`` of the index (404 if it is unknown or its folder is gone)."""
        row = self.index.get(run_id)
        if row is None or not (Path(row["path"]) / META).exists():
            raise HTTPException(404, f"no run {run_id!r}")
        return Run(Path(row["path"]))
