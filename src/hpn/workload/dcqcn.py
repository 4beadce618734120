"""The standing queue DCQCN holds at a saturated link: the fixed point of its fluid model.

The flow engine is fluid (max-min rates) and has no queues. On a link it finds saturated by
``N`` flows, RoCE's congestion control (DCQCN) settles where the marking probability ``p`` of
the switch's RED/ECN curve balances the senders' rate cuts and increases; the queue is then
the point of the RED curve that marks with ``p``. Below saturation no queue builds (~0).

The fluid model is Zhu et al., "Congestion Control for Large-Scale RDMA Deployments"
(SIGCOMM 2015, §5, Eq. 1-5), analysed for its fixed point in Zhu et al., "ECN or Delay:
Lessons Learnt from Analysis of DCQCN and TIMELY" (CoNEXT 2016, §3): with ``N`` synchronous
flows of current rate ``R_C`` and target rate ``R_T`` (packets/s) at a link of ``C``,

- RED/ECN: ``p(q) = 0`` below ``Kmin``, ``(q - Kmin) / (Kmax - Kmin) * Pmax`` up to ``Kmax``,
  1 above;
- queue: ``dq/dt = N R_C - C``;
- alpha: ``dα/dt = g / τ' * ((1 - (1 - p)^(τ' R_C)) - α)``;
- target: ``dR_T/dt = -(R_T - R_C) / τ * a + R_AI R_C * S_F``;
- current: ``dR_C/dt = -R_C α / (2 τ) * a + (R_T - R_C) / 2 * R_C * S``,

where ``a = 1 - (1 - p)^(τ R_C)`` (a rate cut in a window of ``τ``),
``S = p / ((1 - p)^-B - 1) + p / ((1 - p)^(-T R_C) - 1)`` (byte-counter and timer
expirations per packet: each moves ``R_C`` half-way to ``R_T``) and ``S_F`` the same with each
term times ``(1 - p)^(F B)``, ``(1 - p)^(F T R_C)`` (the target rises only after ``F`` fast-
recovery steps without a mark; CoNEXT 2016 Eq. 11). At the fixed point ``R_C = C / N``;
setting the three derivatives to zero leaves one equation in ``p``:
``α a² = τ² R_AI R_C S S_F`` with ``α = 1 - (1 - p)^(τ' R_C)``, solved here by bisection in
``log p``. Its small-``p`` limit (``F p B, F p T R_C << 1``) is the closed form
``p³ = R_AI (1/B + 1/(T R_C))² / (τ' R_C²)`` (:func:`small_p_limit`).

Parameters default to those the DCQCN paper deployed and analysed (SIGCOMM 2015 §4-§6,
CoNEXT 2016 §3: ``Kmin`` 5 KB, ``Kmax`` 200 KB, ``Pmax`` 1 %, ``g`` 1/256, ``τ`` 50 µs,
``τ'`` 55 µs, timer 55 µs, byte counter 10 MB, ``F`` 5, ``R_AI`` 40 Mbps, 1 KB packets). HPN's own
settings are not published; docs/guide/reproduce.md says what that means for the claims.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

KB = 1000.0


@dataclass(frozen=True)
class Dcqcn:
    """DCQCN reaction-point and RED/ECN marking parameters (SI units: bytes, s, bit/s)."""

    kmin: float = 5 * KB  # RED/ECN: marking starts (bytes)
    kmax: float = 200 * KB  # marking reaches pmax (bytes); every packet marked above
    pmax: float = 0.01
    g: float = 1 / 256  # alpha's gain (only the dynamics, not the fixed point, depend on it)
    tau: float = 50e-6  # rate-decrease window (one CNP per window at most)
    tau_alpha: float = 55e-6  # alpha update interval (τ')
    timer: float = 55e-6  # rate-increase timer (T)
    byte_counter: float = 10e6  # rate-increase byte counter (B), bytes
    r_ai: float = 40e6  # additive increase, bit/s
    fast_recovery: int = 5  # F: rate-increase steps toward R_T before R_T itself rises
    packet: float = 1 * KB  # bytes per packet (the model's unit)

    def queue_at(self, p: float) -> float:
        """The queue (bytes) at which RED/ECN marks with probability ``p``.

        Examples
        --------
        >>> Dcqcn().queue_at(0.005)
        102500.0
        >>> Dcqcn().queue_at(0.5)  # above Pmax: the queue sits at Kmax, where marking jumps
        200000.0
        """
        if p >= self.pmax:
            return self.kmax
        return self.kmin + p / self.pmax * (self.kmax - self.kmin)


def _inv_expm1(x: float) -> float:
    """``1 / (e^x - 1)`` for ``x > 0`` without overflow."""
    return math.exp(-x) / -math.expm1(-x) if x > 30 else 1 / math.expm1(x)


def _terms(p: float, rc: float, d: Dcqcn) -> tuple[float, float]:
    """log of both sides of ``α a² = τ² R_AI R_C S S_F`` (rates in packets/s)."""
    lq = math.log1p(-p)
    alpha = -math.expm1(d.tau_alpha * rc * lq)
    a = -math.expm1(d.tau * rc * lq)
    b = d.byte_counter / d.packet
    bt = d.timer * rc  # packets per timer period
    s_b, s_t = p * _inv_expm1(-b * lq), p * _inv_expm1(-bt * lq)
    f = d.fast_recovery
    s_f = s_b * math.exp(f * b * lq) + s_t * math.exp(f * bt * lq)
    r_ai = d.r_ai / (8 * d.packet)
    lhs = math.log(alpha) + 2 * math.log(a)
    rhs = 2 * math.log(d.tau) + math.log(r_ai * rc) + math.log(s_b + s_t) + math.log(s_f)
    return lhs, rhs


def marking_probability(capacity: float, flows: int, d: Dcqcn = Dcqcn()) -> float:
    """The fixed point's marking probability ``p*`` of ``flows`` DCQCN flows sharing a
    saturated link of ``capacity`` bit/s.

    Parameters
    ----------
    capacity
        Link capacity, bit/s.
    flows
        Flows bottlenecked on the link (>= 1).
    d
        DCQCN parameters.

    Returns
    -------
    float
        ``p*`` in (0, 1).
    """
    if flows < 1 or not capacity > 0:
        raise ValueError("flows >= 1 and capacity > 0")
    rc = capacity / (8 * d.packet) / flows
    lo, hi = -40.0, math.log(1 - 1e-12)  # log p: f(lo) < 0 < f(hi)
    for _ in range(200):
        mid = (lo + hi) / 2
        lhs, rhs = _terms(math.exp(mid), rc, d)
        if lhs < rhs:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    return math.exp((lo + hi) / 2)


def small_p_limit(capacity: float, flows: int, d: Dcqcn = Dcqcn()) -> float:
    """The closed form of ``p*`` when ``p B`` and ``p T R_C`` are small (see the module).

    Examples
    --------
    >>> round(small_p_limit(40e9, 2), 6)
    0.000925
    """
    rc = capacity / (8 * d.packet) / flows
    r_ai = d.r_ai / (8 * d.packet)
    b = d.byte_counter / d.packet
    return (r_ai * (1 / b + 1 / (d.timer * rc)) ** 2 / (d.tau_alpha * rc**2)) ** (1 / 3)


def standing_queue(capacity: float, flows: int, d: Dcqcn = Dcqcn()) -> float:
    """Bytes queued at a link saturated by ``flows`` DCQCN flows (its fixed point); 0 for no
    flows.

    Parameters
    ----------
    capacity
        Link capacity, bit/s.
    flows
        Flows bottlenecked on the link.
    d
        DCQCN parameters.

    Returns
    -------
    float
        The queue, bytes.
    """
    if flows < 1:
        return 0.0
    return d.queue_at(marking_probability(capacity, flows, d))


__all__ = ["Dcqcn", "marking_probability", "small_p_limit", "standing_queue"]
