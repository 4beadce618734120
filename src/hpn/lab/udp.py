"""The lab's own traffic tool: paced UDP flows to port 4791 (RoCEv2's) with chosen source
ports, sent and received by one process holding sockets in many namespaces.

Each flow's socket is opened inside its source host's namespace and bound to (NIC address,
source port); each receiving host has one socket on port 4791. A packet carries the flow id,
a sequence number and padding to the payload size. Flows are paced at a fixed rate (the
sender sleeps between due packets), so the lab's counters see a known byte count and the
receiver can tell the gaps and the losses per flow. Arrivals are stamped by the kernel as the
packet is queued to the socket (``SO_TIMESTAMPNS``), not when this loop reads it, so a gap is
the network's, not the loop's on a busy machine. ``events`` run at given times during the
transfer (failures, repairs).
"""

from __future__ import annotations

import errno
import queue
import selectors
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from hpn.lab import netns
from hpn.lab.plan import LabPlan

ROCE_PORT = 4791
HEADER = struct.Struct("!II")  # flow id, sequence number
WIRE_OVERHEAD = 14 + 20 + 8  # Ethernet, IPv4 and UDP headers per packet on a veth
MAX_PPS = 20_000
SO_TIMESTAMPNS = 35  # Linux's value (asm-generic/socket.h); the socket module lacks the name
TIMESPEC = struct.Struct("qq")


@dataclass
class FlowSet:
    """Flows as arrays: src/dst NIC nodes, UDP source port, payload bytes to send."""

    src: np.ndarray
    dst: np.ndarray
    sport: np.ndarray
    size: np.ndarray

    def __len__(self) -> int:
        return len(self.src)


@dataclass
class Transfer:
    """What happened to each flow."""

    payload: int
    sent: np.ndarray  # packets sent (handed to the kernel)
    send_errors: np.ndarray  # sends refused by the kernel (no route, ...)
    received: np.ndarray
    first_rx: np.ndarray  # seconds from start, nan if none
    last_rx: np.ndarray
    max_gap: np.ndarray  # longest interval between consecutive arrivals, s
    gap_start: np.ndarray  # when that interval began, s
    duration: float
    events: list[dict] = field(default_factory=list)
    loop_stall_max_s: float = 0.0  # longest pause of the send loop: the timing resolution
    arrivals: list[np.ndarray] = field(default_factory=list)  # per flow, s from start

    @property
    def lost(self) -> np.ndarray:
        return self.sent - self.received

    def wire_bytes(self) -> np.ndarray:
        """Bytes each flow put on every link it crossed (frames as veth counters count them)."""
        return self.sent * (self.payload + WIRE_OVERHEAD)


def packets_of(size: np.ndarray, payload: int) -> np.ndarray:
    return np.maximum(np.ceil(np.asarray(size, float) / payload), 1).astype(np.int64)


def run_flows(
    plan: LabPlan,
    flows: FlowSet,
    rate_bps: float,
    payload: int = 1000,
    events: list[tuple[float, Callable[[], dict]]] | None = None,
    drain_s: float = 0.3,
    rebinds: queue.SimpleQueue | None = None,
) -> Transfer:
    """Send every flow at ``rate_bps`` (payload bits per second) from t = 0; return per-flow
    counts. Runs ``events`` (time, function) in a thread as their time comes; ``(flow,
    source port)`` pairs put on ``rebinds`` move a flow to a new source port (a new path)."""
    n = len(flows)
    pkts = packets_of(flows.size, payload)
    pps = rate_bps / (8 * payload)
    if pps * n > MAX_PPS:
        from hpn.errors import InputError

        raise InputError(
            "rate", f"{pps * n:,.0f} packets/s in all exceeds {MAX_PPS:,}; lower the rate"
        )
    interval = 1.0 / pps
    socks: list[socket.socket] = []
    rx: list[socket.socket] = []
    sel = selectors.DefaultSelector()
    try:
        for i in range(n):
            socks.append(_socket(plan, int(flows.src[i]), int(flows.sport[i])))
        for ns in sorted({plan.ns(int(d)) for d in flows.dst}):
            with netns.entered(ns):
                so = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            so.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            so.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            so.bind(("0.0.0.0", ROCE_PORT))
            so.setblocking(False)
            sel.register(so, selectors.EVENT_READ)
            rx.append(so)
        dests = [(plan.ip(int(d)), ROCE_PORT) for d in flows.dst]
        pad = b"\0" * (payload - HEADER.size)
        sent = np.zeros(n, np.int64)
        errs = np.zeros(n, np.int64)
        recv = np.zeros(n, np.int64)
        first = np.full(n, np.nan)
        last = np.full(n, np.nan)
        gap = np.zeros(n)
        gap_at = np.full(n, np.nan)
        arrivals: list[list[float]] = [[] for _ in range(n)]
        # stagger the flows' phases so packets do not leave in bursts
        due = np.arange(n) * (interval / max(n, 1))
        pending = sorted(events or [], key=lambda e: e[0])
        log: list[dict] = []
        threads: list[threading.Thread] = []
        t0 = time.monotonic()
        wall0 = time.time() - (time.monotonic() - t0)  # the kernel stamps in wall-clock time
        end_send = float((pkts - 1).max() * interval) if n else 0.0

        def drain(now: float) -> None:
            for key, _ in sel.select(timeout=0):
                so = cast(socket.socket, key.fileobj)  # only sockets are registered
                while True:
                    try:
                        data, anc, _flags, _addr = so.recvmsg(65536, 64)
                    except BlockingIOError:
                        break
                    now = _stamp(anc, wall0, now)
                    fid, _seq = HEADER.unpack_from(data)
                    if fid >= n:
                        continue
                    if recv[fid]:
                        g = now - last[fid]
                        if g > gap[fid]:
                            gap[fid], gap_at[fid] = g, last[fid]
                    else:
                        first[fid] = now
                    last[fid] = now
                    recv[fid] += 1
                    arrivals[fid].append(now)

        stall = 0.0
        prev = 0.0
        while True:
            now = time.monotonic() - t0
            stall, prev = max(stall, now - prev), now
            while pending and pending[0][0] <= now:  # in a thread: sending goes on
                at, fn = pending.pop(0)
                info = {"at_s": round(at, 4), "ran_s": round(now, 4)}
                log.append(info)
                th = threading.Thread(target=lambda fn=fn, info=info: info.update(fn() or {}))
                th.start()
                threads.append(th)
            while rebinds is not None and not rebinds.empty():
                i, port = rebinds.get()
                socks[i].close()
                socks[i] = _socket(plan, int(flows.src[i]), int(port))
                flows.sport[i] = port
            ready = np.flatnonzero((due <= now) & (sent + errs < pkts))
            for ready_i in ready:
                i = int(ready_i)
                k = int(sent[i] + errs[i])
                try:
                    socks[i].sendto(HEADER.pack(i, k) + pad, dests[i])
                    sent[i] += 1
                except OSError as e:
                    if e.errno in (errno.EAGAIN, errno.ENOBUFS):
                        continue  # try again on the next pass
                    errs[i] += 1
                due[i] += interval
            drain(time.monotonic() - t0)
            done = (sent + errs >= pkts).all() and now > end_send + drain_s and not pending
            if done and not any(th.is_alive() for th in threads):
                break
            left = due[sent + errs < pkts]
            nxt = min(left.min() if len(left) else now + 0.002, pending[0][0] if pending else 1e9)
            sel.select(timeout=max(0.0, min(nxt - (time.monotonic() - t0), 0.002)))
        duration = time.monotonic() - t0
    finally:
        for th in locals().get("threads", []):
            th.join()
        for so in socks + rx:
            so.close()
        sel.close()
    arr = [np.asarray(a) for a in arrivals]
    return Transfer(payload, sent, errs, recv, first, last, gap, gap_at, duration, log, stall, arr)


def _stamp(anc: list, wall0: float, fallback: float) -> float:
    """A packet's kernel arrival time in seconds since the transfer began."""
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= TIMESPEC.size:
            sec, ns = TIMESPEC.unpack_from(data)
            return sec + ns * 1e-9 - wall0
    return fallback


def _socket(plan: LabPlan, src: int, sport: int) -> socket.socket:
    """A UDP socket in ``src``'s host namespace bound to (its NIC address, ``sport``)."""
    with netns.entered(plan.ns(src)):
        so = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    so.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    so.bind((plan.ip(src), sport))
    so.setblocking(False)
    return so
