"""The device budget against what a CUDA device has free, on a fake device (no GPU here):
``torch.cuda``'s memory queries are monkeypatched; on CPU nothing is asked of them."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.serve.conftest import NEEDS

torch = pytest.importorskip("torch", reason=NEEDS)

from hpn.errors import InputError  # noqa: E402
from hpn.serve.backend import EngineBackend  # noqa: E402
from hpn.serve.device import DeviceSpec, check_fits, default_spec, device_free  # noqa: E402

GiB = 1 << 30
CUDA = DeviceSpec(kind="cuda", memory_bytes=4 * GiB, link_bps=None, dtype="bfloat16")
CPU = DeviceSpec(kind="cpu", memory_bytes=4 * GiB)


@pytest.fixture
def gpu(monkeypatch):
    """A fake CUDA device: ``gpu.free`` bytes free to the driver, ``gpu.cached`` held unused
    by torch's caching allocator; every query recorded in ``gpu.asked``."""
    state = SimpleNamespace(free=10 * GiB, total=80 * GiB, cached=0, asked=[])

    def mem_get_info(index=None):
        state.asked.append(("mem_get_info", index))
        return state.free, state.total

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "mem_get_info", mem_get_info)
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda index=None: state.cached + GiB)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda index=None: GiB)
    return state


@pytest.fixture
def no_gpu(monkeypatch):
    """Any CUDA memory query fails the test (CPU instances must not ask)."""

    def refuse(*args, **kwargs):
        raise AssertionError("a CUDA memory query on CPU")

    for name in ("mem_get_info", "memory_reserved", "memory_allocated"):
        monkeypatch.setattr(torch.cuda, name, refuse)


def test_cuda_default_shares_90_percent_of_the_free_memory(gpu):
    spec = default_spec("cuda", 4)
    assert spec.memory_bytes == int(10 * GiB * 0.9 / 4)


def test_cuda_memory_past_the_free_share_is_refused_naming_the_flag(gpu):
    share = int(10 * GiB * 0.9 / 4)  # 2,304 MiB each
    assert default_spec("cuda", 4, memory_bytes=share).memory_bytes == share  # at it: fine
    with pytest.raises(InputError) as e:
        default_spec("cuda", 4, memory_bytes=share + 1)
    assert e.value.field == "memory" and "lower --memory" in e.value.message
    assert "4 instance(s)" in e.value.message and "2,304 MiB each" in e.value.message


def test_cpu_budget_is_its_own_as_before(no_gpu):
    spec = default_spec("cpu", 4, memory_bytes=64 * GiB)  # host memory: not checked
    assert (spec.kind, spec.memory_bytes) == ("cpu", 64 * GiB)
    assert device_free(CPU) is None
    check_fits(CPU, 10**15, "anything")  # nothing to ask on CPU


def test_device_free_counts_what_torch_caches_unused(gpu):
    gpu.free, gpu.cached = 3 * GiB, 2 * GiB
    assert device_free(CUDA) == 5 * GiB
    assert ("mem_get_info", CUDA.index) in gpu.asked


def test_check_fits_refuses_past_the_free_memory_only(gpu):
    check_fits(CUDA, 10 * GiB, "the KV pools")  # exactly what is free
    with pytest.raises(InputError) as e:
        check_fits(CUDA, 10 * GiB + 1, "the KV pools of 2 instance(s)")
    assert e.value.field == "memory"
    assert e.value.message.startswith("the KV pools of 2 instance(s) need 10,240 MiB")
    assert "10,240 MiB free" in e.value.message and "--memory" in e.value.message


def test_backend_refuses_kv_pools_the_device_cannot_hold_before_any_thread(gpu, monkeypatch):
    from hpn.pool.backend import Cluster
    from hpn.pool.metrics import Recorder

    info = SimpleNamespace(kv_bytes_per_token=lambda elem: 1024, vocab=100)
    hosts = {"m": SimpleNamespace(info=info, nbytes=GiB)}
    started = []
    monkeypatch.setattr(
        "hpn.serve.backend.Worker", lambda *a, **k: started.append(a) or SimpleNamespace()
    )
    gpu.free = 5 * GiB  # 2 instances x 4 GiB (KV pool 3 GiB + weights 1 GiB) do not fit
    with pytest.raises(InputError, match="KV pools and largest model of 2 instance"):
        EngineBackend(Cluster(2, 0, 0, 1), Recorder(), hosts, CUDA)
    assert started == []  # refused before a worker (or a pool) was made


class _Lane:
    def __init__(self):
        self.jobs = []

    def submit(self, fn, *args):
        self.jobs.append((fn, args))


def _prefetching(spec, weights=GiB, resident=GiB):
    """A backend with one instance holding `resident` bytes of model "a" and KV blocks of
    1 KiB per token: just what `EngineBackend.prefetch` reads."""
    lane = _Lane()
    worker = SimpleNamespace(weight_bytes=lambda: resident, h2d=lane, copy_in=object())
    be = SimpleNamespace(
        spec=spec,
        workers={0: worker},
        hosts={"b": SimpleNamespace(nbytes=weights)},
        kv_bytes_per_token={"a": 1024},
        _kv_on=lambda iid: 0,
    )
    inst = SimpleNamespace(iid=0, prefetched=None, resident="a", models=frozenset({"a"}))
    return be, inst, lane


@pytest.mark.parametrize(("free", "started"), [(GiB, True), (GiB - 1, False)])
def test_cuda_pre_load_needs_room_on_the_device_not_only_in_the_budget(gpu, free, started):
    gpu.free = free  # the budget allows it: 4 GiB - 1 GiB resident - 1 GiB > the KV floor
    be, inst, lane = _prefetching(CUDA)
    assert EngineBackend.prefetch(be, inst, "b") is started
    assert (inst.prefetched == "b") is started and bool(lane.jobs) is started


def test_cpu_pre_load_follows_the_budget_alone(no_gpu):
    be, inst, lane = _prefetching(CPU)
    assert EngineBackend.prefetch(be, inst, "b") is True and lane.jobs
    be, inst, lane = _prefetching(CPU, weights=3 * GiB)  # past the budget: refused as before
    assert EngineBackend.prefetch(be, inst, "b") is False and not lane.jobs
