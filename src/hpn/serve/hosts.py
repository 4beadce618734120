"""Checkpoints of a model folder loaded into host memory, each checked against the budget."""

from __future__ import annotations

from pathlib import Path

from hpn.errors import InputError
from hpn.serve.backend import BLOCK_TOKENS, KV_FLOOR_BLOCKS
from hpn.serve.device import DeviceSpec
from hpn.serve.store import scan
from hpn.serve.weights import HostModel


def load_hosts(models: str | Path, spec: DeviceSpec, names: list[str] | None = None):
    """Every checkpoint of `models` (or the `names` among them) in host memory."""
    infos = scan(models)
    if names:
        unknown = sorted(set(names) - set(infos))
        if unknown:
            raise InputError("models", f"not in {models}: {', '.join(unknown)}")
        infos = {n: infos[n] for n in names}
    hosts = {n: HostModel(i, spec) for n, i in infos.items()}
    for n, h in hosts.items():
        floor = KV_FLOOR_BLOCKS * BLOCK_TOKENS * h.info.kv_bytes_per_token(spec.elem_bytes)
        if h.nbytes + floor > spec.memory_bytes:
            raise InputError(
                "memory",
                f"{n} needs {(h.nbytes + floor) / 2**20:.0f} MiB (weights + KV floor), "
                f"the instance budget is {spec.memory_bytes / 2**20:.0f} MiB",
            )
    return hosts
