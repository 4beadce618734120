"""An offline HTML report of a set of runs: key figures, configs and every plot.

``write_html(runs, path)`` writes one self-contained file (plotly.js inline, no CDN).
"""

from hpn.report.html import write_html

__all__ = ["write_html"]
