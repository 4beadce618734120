"""Tiny generated checkpoints shared by the engine tests (skipped without the extra)."""

from __future__ import annotations

import os

import pytest

NEEDS = "the engine tests need the `engine` extra (torch, transformers)"


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory):
    pytest.importorskip("torch", reason=NEEDS)
    pytest.importorskip("transformers", reason=NEEDS)
    from hpn.serve.store import make_models

    d = tmp_path_factory.mktemp("models")
    make_models(d, 3, ["1m", "2m"], seed=7, max_len=512)
    return d


@pytest.fixture(scope="session")
def spec():
    from hpn.serve.device import DeviceSpec

    # a fast link so tests stay quick; switches still copy every byte. FP32 on either
    # device, so tokens compare exactly with generate() in FP32.
    kind = os.environ.get("HPN_SERVE_DEVICE", "cpu")
    return DeviceSpec(kind=kind, memory_bytes=256 << 20, link_bps=2e9, threads=1)


@pytest.fixture(scope="session")
def hosts(model_dir, spec):
    from hpn.serve.engine import load_hosts

    return load_hosts(model_dir, spec)


def flat_profile(hosts, step=0.004, switch=0.01):
    """A hand-made profile: the policies' estimates only steer decisions, not tokens."""
    fits = {m: {"prefill": [0.002, 1e-5, 0.0], "decode": [step, 0.0, 1e-4]} for m in hosts}
    return {
        "device": {"kind": "cpu", "memory_bytes": 256 << 20, "link_bps": 2e9},
        "fits": fits,
        "switch_s": {m: switch for m in hosts},
        "cold_switch_s": {m: 2 * switch for m in hosts},
        "weights": {m: h.nbytes for m, h in hosts.items()},
    }


def aegaeon_engine(hosts, spec):
    """A started one-prefill, one-decode aegaeon engine on the flat profile (the API tests')."""
    from hpn.serve.engine import Engine, cluster_for
    from hpn.serve.metrics import ServeMetrics

    eng = Engine(
        hosts,
        spec,
        "aegaeon",
        cluster_for("aegaeon", 1, 1, 0),
        profile=flat_profile(hosts),
        sink=ServeMetrics(),
    )
    eng.start()
    return eng


def reference(host, prompt, n):
    """transformers' own greedy generate() on the host copy."""
    import torch
    from transformers import AutoModelForCausalLM

    dev = host.spec.torch_device
    m = AutoModelForCausalLM.from_pretrained(host.info.path, dtype=torch.float32).to(dev)
    out = m.generate(
        torch.tensor([prompt], device=dev),
        attention_mask=torch.ones(1, len(prompt), dtype=torch.long, device=dev),
        max_new_tokens=n,
        min_new_tokens=n,
        do_sample=False,
        eos_token_id=None,
        pad_token_id=0,
    )
    return out[0, len(prompt) :].tolist()
