"""hpn: Alibaba's HPN training fabric and Aegaeon serving pool, as a toolkit.

The public API starts at :func:`hpn.topology.build` (a fabric from a spec or preset name).
"""

__version__ = "0.1.0"
