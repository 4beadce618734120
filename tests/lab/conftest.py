"""Lab tests need root and network namespaces: they skip, saying why, where either is missing.

Test labs are named ``t<worker>`` (prefix ``hlt<worker>``): a run killed mid-test leaves at
most one lab per worker, which the next run's first ``up`` removes, and the session removes
its own labs at the end.
"""

from __future__ import annotations

import os
import signal

import pytest

from hpn.lab import netns

_REASON = netns.available() if os.name == "posix" else "the lab needs Linux"


def pytest_configure(config):
    config.addinivalue_line("markers", "lab: builds a network-namespace lab (root, Linux)")
    if not _REASON and not hasattr(config, "workerinput"):  # once per run, before workers
        for prefix in netns.all_lab_prefixes():
            if prefix.startswith("hlt"):  # test labs a killed run left behind
                netns.remove_lab(prefix)


def pytest_collection_modifyitems(config, items):
    if not _REASON:
        return
    skip = pytest.mark.skip(reason=f"lab unavailable: {_REASON}")
    for item in items:
        if "lab" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def lab_name(worker_id):
    """A lab name unique to this test worker; its lab is removed afterwards, whatever happens."""
    name = "t" + ("0" if worker_id == "master" else worker_id.removeprefix("gw"))[:3]
    netns.remove_lab("hl" + name)

    def stop(signum, frame):  # SIGTERM: unwind so this teardown still removes the lab
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield name
    finally:
        signal.signal(signal.SIGTERM, previous)
        netns.remove_lab("hl" + name)
