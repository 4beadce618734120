"""Weights in host memory and their copies in an instance's device pool.

`HostModel` loads a checkpoint once (transformers' `from_pretrained`, in the compute dtype;
pinned on CUDA) and keeps it in host memory. `DeviceModel` is one instance's copy: a
skeleton of the same transformers class built on the meta device (no memory, no
initialisation) whose parameters and buffers are pointed at device tensors copied from the
host over the instance's link. Scaling down drops the device tensors.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from hpn.serve.device import DeviceSpec, Link
from hpn.serve.store import ModelInfo

_build_lock = threading.Lock()


class HostModel:
    """A checkpoint loaded into host memory, with its tokenizer."""

    def __init__(self, info: ModelInfo, spec: DeviceSpec):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        self.info = info
        self.spec = spec
        with _build_lock:
            module = AutoModelForCausalLM.from_pretrained(info.path, dtype=spec.torch_dtype)
        module.eval()
        self.config = module.config
        self.tokenizer = AutoTokenizer.from_pretrained(info.path)
        pin = spec.kind == "cuda"
        # (owner module path, attribute, kind, host tensor); tied weights share one tensor
        self.slots: list[tuple[str, str, str, torch.Tensor]] = []
        seen: dict[int, torch.Tensor] = {}
        named: list[tuple[str, str, torch.Tensor]] = [
            ("param", n, p) for n, p in module.named_parameters(remove_duplicate=False)
        ]
        named += [("buffer", n, b) for n, b in module.named_buffers(remove_duplicate=False)]
        for kind, name, t in named:
            if id(t) not in seen:
                data = t.detach()
                seen[id(t)] = data.pin_memory() if pin else data
            owner, _, attr = name.rpartition(".")
            self.slots.append((owner, attr, kind, seen[id(t)]))
        self.unique = list({id(t): t for *_, t in self.slots}.values())
        self.nbytes = sum(t.numel() * t.element_size() for t in self.unique)
        self.eos = self.config.eos_token_id

    def fresh(self):
        """A newly built and initialised module of the same class (host memory)."""
        from transformers import AutoModelForCausalLM

        with _build_lock:
            m = AutoModelForCausalLM.from_config(self.config, dtype=self.spec.torch_dtype)
        return m.eval()

    def skeleton(self):
        """An uninitialised module of the same class on the meta device."""
        import torch
        from transformers import AutoModelForCausalLM

        with _build_lock, torch.device("meta"):
            m = AutoModelForCausalLM.from_config(self.config, dtype=self.spec.torch_dtype)
        return m.eval()


class DeviceModel:
    """One instance's device copy of a `HostModel`."""

    def __init__(self, host: HostModel, spec: DeviceSpec):
        self.host = host
        self.spec = spec
        self.module: Any = None  # the bound transformers module while resident
        self.nbytes = host.nbytes
        self._skeleton: Any = None
        self.copy_s = 0.0

    def load(self, link: Link, cold: bool = False, startup_s: float = 0.0) -> float:
        """Allocate device tensors, copy the weights over `link`, bind them; seconds taken.

        `cold`: start the model as a fresh engine does first (build and initialise the
        transformers module from its config), the scale-up of a system without Aegaeon's
        reusable engine (ServerlessLLM's engine start-up); with `startup_s`, the start-up
        lasts at least that long (a configured engine start-up: vLLM's initialisation,
        which this engine does not have) before the weights are copied."""
        import torch

        t0 = time.perf_counter()
        if cold:
            self._skeleton = self.host.fresh()
            wait = startup_s - (time.perf_counter() - t0)
            if wait > 0:
                time.sleep(wait)
        elif self._skeleton is None:
            self._skeleton = self.host.skeleton()
        dev = self.spec.torch_device
        copies = {id(t): torch.empty_like(t, device=dev) for t in self.host.unique}
        self.copy_s = link.copy([(copies[id(t)], t) for t in self.host.unique])
        m = self._skeleton
        for owner, attr, kind, t in self.host.slots:
            mod = m.get_submodule(owner) if owner else m
            d = copies[id(t)]
            if kind == "param":
                mod._parameters[attr] = torch.nn.Parameter(d, requires_grad=False)
            else:
                mod._buffers[attr] = d
        # tied parameters must stay one object
        params: dict[int, torch.nn.Parameter] = {}
        for owner, attr, kind, t in self.host.slots:
            if kind == "param":
                mod = m.get_submodule(owner) if owner else m
                mod._parameters[attr] = params.setdefault(id(t), mod._parameters[attr])
        self.module = m
        return time.perf_counter() - t0

    def evict(self) -> None:
        """Scale down: release the device tensors (the skeleton stays, empty)."""
        import torch

        m = self.module
        if m is None:
            return
        self.module = None
        meta = torch.device("meta")
        for owner, attr, kind, _ in self.host.slots:
            mod = m.get_submodule(owner) if owner else m
            store = mod._parameters if kind == "param" else mod._buffers
            store[attr] = store[attr].to(meta)
        if self.spec.kind == "cuda":
            torch.cuda.empty_cache()
