"""``hpn reproduce``: every quantitative claim of both papers that the model covers, the
model's value beside the paper's, with bands, computed verdicts, causes and one figure each.

- :mod:`~hpn.reproduce.catalog`: the claims (``claims.toml``: sources, paper values with
  their precision, bands, documented causes) and what the model does not cover;
- :mod:`~hpn.reproduce.measures_hpn`, :mod:`~hpn.reproduce.measures_aegaeon`,
  :mod:`~hpn.reproduce.measures_traffic`: one measure
  per claim, computing the model's value from registered commands
  (through the runner the caller passes: :func:`hpn.app.run`, in-process; each run
  recorded in the store);
- :mod:`~hpn.reproduce.verdict`: pass / explained / fail from the band;
- :mod:`~hpn.reproduce.runner`, :mod:`~hpn.reproduce.figures`, :mod:`~hpn.reproduce.html`:
  the report folder (``report.html``, ``report.json``, ``figures/ID.png``).

The application layer's ``reproduce`` command (:mod:`hpn.app.reproduce`) runs it.
"""

from hpn.reproduce.catalog import Claim, load, select, uncovered
from hpn.reproduce.verdict import VERDICTS, verdict

__all__ = ["VERDICTS", "Claim", "load", "select", "uncovered", "verdict"]
