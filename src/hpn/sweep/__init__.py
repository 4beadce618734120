"""Parameter sweeps over any runnable command: resumable, local processes or dask."""

from hpn.sweep.runner import run_sweep
from hpn.sweep.spec import SweepSpec, load_sweep, points

__all__ = ["SweepSpec", "load_sweep", "points", "run_sweep"]
