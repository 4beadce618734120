"""An instance's device: memory budget, thread count and the host link it copies over.

CPU instances are worker threads of one process (compute, host-to-device and
device-to-host copies each on their own thread); each compute thread sets its own intra-op
thread count (OpenMP's per-thread setting). The "device" memory of a CPU instance is a
separate set of tensors, so a scale-up is a real copy, throttled to `link_bps`.

Defaults and why:

- CPU link 1 GB/s: keeps the ratio of a model switch to a decode step near the real one.
  On an H800 a 7B model switches in 15 GB / (64 GiB/s x 0.625) = 0.35 s against a decode
  step of about 20 ms (ratio ~17); a generated 15.6M-parameter model (62 MB in FP32)
  switches in 62 ms against a ~4 ms step on one CPU core (ratio ~15).
- CPU budget 1 GiB per instance: room for one model of up to ~100M parameters plus a
  pre-loaded one and KV, so pre-loading and KV limits matter as on a GPU.
- CUDA: no throttle (the real PCIe/NVLink copy from pinned memory), BF16, and 90 % of the
  GPU's free memory shared evenly by the instances on it (Aegaeon keeps ~10 % for
  activations).

On CUDA the budget is also checked against what the device has (:func:`device_free`): a
``--memory`` whose instances together ask for more than 90 % of the free memory is refused
at start (:func:`default_spec`), as are KV pools (with the largest model's weights) the
device cannot hold (:func:`check_fits`, before they are allocated); and a pre-load the
budget allows but the device has no room for is not started (the budget counts the KV
blocks in use, while the pool is allocated whole, as vLLM's is). A CPU instance's "device"
memory is host memory: only its budget counts there, as before.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from hpn.errors import InputError

GiB = 1 << 30
CPU_LINK_BPS = 1e9
CPU_BUDGET = 1 * GiB
CUDA_MEMORY_FRACTION = 0.9
CHUNK_BYTES = 4 << 20


@dataclass(frozen=True)
class DeviceSpec:
    """Where one instance computes and what it may use."""

    kind: str = "cpu"  # "cpu" or "cuda"
    index: int = 0
    memory_bytes: int = CPU_BUDGET
    link_bps: float | None = CPU_LINK_BPS  # None: copy at the hardware's speed
    threads: int = 1
    dtype: str = "float32"

    def __post_init__(self) -> None:
        if self.kind not in ("cpu", "cuda"):
            raise InputError("device", f"use cpu or cuda, got {self.kind!r}")
        if self.memory_bytes <= 0:
            raise InputError("memory", "the device budget must be positive")
        if self.link_bps is not None and self.link_bps <= 0:
            raise InputError("link", "the link speed must be positive")
        if not 1 <= self.threads <= 256:
            raise InputError("threads", f"must be 1..256, got {self.threads}")
        if self.dtype not in ("float32", "bfloat16", "float16"):
            raise InputError("dtype", f"use float32, bfloat16 or float16, got {self.dtype!r}")

    @property
    def torch_device(self):
        import torch

        return torch.device(self.kind, self.index) if self.kind == "cuda" else torch.device("cpu")

    @property
    def torch_dtype(self):
        import torch

        return getattr(torch, self.dtype)

    @property
    def elem_bytes(self) -> int:
        return 4 if self.dtype == "float32" else 2


def _mib(n: float) -> str:
    return f"{n / 2**20:,.0f} MiB"


def device_free(spec: DeviceSpec) -> int | None:
    """Bytes the CUDA device of `spec` can still hand out: the driver's free memory
    (``torch.cuda.mem_get_info``) plus what torch's caching allocator holds unused; None
    on CPU (no device to ask)."""
    if spec.kind != "cuda":
        return None
    import torch

    free, _ = torch.cuda.mem_get_info(spec.index)
    cached = torch.cuda.memory_reserved(spec.index) - torch.cuda.memory_allocated(spec.index)
    return int(free + max(0, cached))


def check_fits(spec: DeviceSpec, need: float, what: str) -> None:
    """Refuse (InputError naming ``--memory``) `need` bytes the CUDA device of `spec` has
    no room for; nothing on CPU.

    Parameters
    ----------
    spec
        The instances' device.
    need
        Bytes about to be allocated on it (all instances together).
    what
        What they are for, as the message says it (``"the KV pools of 4 instances"``).
    """
    free = device_free(spec)
    if free is not None and need > free:
        raise InputError(
            "memory",
            f"{what} need {_mib(need)} but cuda:{spec.index} has {_mib(free)} free; "
            "lower --memory (or --kv-blocks, or the instances)",
        )


def default_spec(kind: str | None = None, instances: int = 1, **over) -> DeviceSpec:
    """CUDA when present (unless `kind` says otherwise), else CPU, with the defaults above;
    on CUDA a budget given (``memory_bytes``) is refused past 90 % of the device's free
    memory shared by the `instances`."""
    import torch

    if kind is None:
        kind = "cuda" if torch.cuda.is_available() else "cpu"
    if kind == "cuda":
        if not torch.cuda.is_available():
            raise InputError("device", "cuda requested but torch sees no CUDA device")
        free, _ = torch.cuda.mem_get_info()
        share = int(free * CUDA_MEMORY_FRACTION / max(1, instances))
        base: dict[str, Any] = dict(
            kind="cuda", memory_bytes=share, link_bps=None, dtype="bfloat16"
        )
        asked = over.get("memory_bytes")
        if asked is not None and asked > share:
            raise InputError(
                "memory",
                f"{instances} instance(s) x {_mib(asked)} exceed the device: "
                f"{CUDA_MEMORY_FRACTION:.0%} of its {_mib(free)} free is {_mib(share)} each; "
                "lower --memory (or the instances)",
            )
    else:
        base = {"kind": "cpu"}
    base.update({k: v for k, v in over.items() if v is not None})
    return DeviceSpec(**base)


class Link:
    """One direction of an instance's host link: copies run at most at `bps`."""

    def __init__(self, spec: DeviceSpec):
        self.bps = spec.link_bps
        self.cuda = spec.kind == "cuda"
        self._stream: Any = None  # torch.cuda.Stream, made on first use

    def copy(self, pairs) -> float:
        """Copy each (dst, src) tensor pair; returns the seconds taken."""
        import torch

        t0 = time.perf_counter()
        if self.cuda:
            if self._stream is None:
                self._stream = torch.cuda.Stream()
            with torch.cuda.stream(self._stream):
                sent = 0
                for dst, src in pairs:
                    dst.copy_(src, non_blocking=True)
                    sent += src.numel() * src.element_size()
                    self._pace(t0, sent)
            self._stream.synchronize()
            return time.perf_counter() - t0
        sent = 0
        for dst, src in pairs:
            d, s = dst.view(-1), src.reshape(-1)
            step = max(1, CHUNK_BYTES // max(1, s.element_size()))
            for a in range(0, s.numel(), step):
                d[a : a + step].copy_(s[a : a + step])
                sent += min(step, s.numel() - a) * s.element_size()
                self._pace(t0, sent)
        return time.perf_counter() - t0

    def _pace(self, t0: float, sent: int) -> None:
        if self.bps is None:
            return
        wait = t0 + sent / self.bps - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
