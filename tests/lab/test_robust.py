"""The lab under a tester's hands (issue 28 part 5): one command per lab name at a time, no
silent rebuild, a killed ``fail`` repaired, link and BGP state in ``status``, bounded inputs,
and the network engineer's tools (exec, vtysh, capture)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from hpn.errors import InputError
from hpn.lab import bgp, netns, service
from hpn.lab.fail import parse_target
from hpn.lab.plan import LabSpec, make_plan
from tests.conftest import assert_input_error, run_cli

from .leftovers import NOTHING, lab_pids, leftovers

pytestmark = pytest.mark.lab

_UP = """
import sys
from hpn.lab import service
from hpn.lab.plan import LabSpec
service.up(LabSpec(name=sys.argv[1], control=sys.argv[2]))
"""


def _py(*args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.Popen(
        [sys.executable, "-c", *args], env=env, stderr=subprocess.PIPE, text=True
    )


def test_two_ups_at_once_one_wins_nothing_orphaned(lab_name):
    a, b = _py(_UP, lab_name, "static"), _py(_UP, lab_name, "static")
    (_, ea), (_, eb) = a.communicate(timeout=120), b.communicate(timeout=120)
    codes = sorted([a.returncode, b.returncode])
    assert codes[0] == 0 and codes[1] != 0, (ea, eb)
    loser = ea if a.returncode else eb
    assert "busy" in loser or "is up" in loser
    st = service.status(lab_name)
    assert st["status"] == "up" and st["namespaces"] == st["namespaces_expected"]
    prefix = "hl" + lab_name
    pids = lab_pids(prefix)
    service.down(lab_name)
    assert leftovers(prefix, pids) == NOTHING


def test_up_on_a_running_lab_refuses_unless_replace(lab_name):
    service.up(LabSpec(name=lab_name, control="static"))
    with pytest.raises(InputError, match="--replace"):
        service.up(LabSpec(name=lab_name, control="static", hosts_per_segment=1))
    st = service.up(LabSpec(name=lab_name, control="static", hosts_per_segment=1), replace=True)
    assert st["status"] == "up" and st["hosts"] == 2
    r = run_cli("lab", "up", "--name", lab_name, "--control", "static")
    assert r.code == 2 and "--replace" in r.err and "Traceback" not in r.err


def test_a_held_lock_is_one_line(lab_name):
    prefix = "hl" + lab_name
    with netns.locked(prefix):
        with pytest.raises(InputError, match="busy"):
            service.up(LabSpec(name=lab_name, control="static"))
        with pytest.raises(InputError, match="busy"):
            service.down(lab_name)
    assert leftovers(prefix) == NOTHING  # no lock file left once nothing of the lab is


_FAIL = """
import sys
from hpn.lab.fail import fail
fail(sys.argv[1], "link:host=0,nic=0,port=0", repair=20.0, before=0.3, after=0.3)
"""


def test_killed_fail_shows_degraded_and_repair_restores(lab_name):
    if bgp.missing():
        pytest.skip(bgp.missing())
    service.up(LabSpec(name=lab_name, control="bgp"))
    p = _py(_FAIL, lab_name)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not service.status(lab_name).get("links_down"):
        time.sleep(0.1)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    st = service.status(lab_name)
    assert st["status"] == "degraded" and len(st["links_down"]) == 1
    with pytest.raises(InputError, match="repair"):
        service.fail(lab_name)
    r = service.repair(lab_name)
    assert r["links_repaired"] == st["links_down"] and r["converge_s"] is not None
    st = service.status(lab_name)
    assert st["status"] == "up" and st["links_down"] == []
    assert st["bgp_established"] == st["bgp_sessions"] == 16  # 8 switch links, both ends
    assert set(st["routes"]) == {"t0", "t1", "t2", "t3", "a0", "a1", "a2", "a3"}
    assert service.repair(lab_name)["links_repaired"] == []


def test_engineer_tools(lab_name, tmp_path):
    if bgp.missing():
        pytest.skip(bgp.missing())
    service.up(LabSpec(name=lab_name, control="bgp"))
    prefix = "hl" + lab_name
    out = service.exec_in(lab_name, "t0", ["ip", "-br", "link"])
    assert out["returncode"] == 0 and f"{prefix}a0" in out["stdout"]
    with pytest.raises(InputError, match="choose from"):
        service.exec_in(lab_name, "x9", ["true"])
    v = service.vtysh(lab_name, "t0", "show bgp summary json")
    assert '"Established"' in v["output"] or "Established" in v["output"]
    with pytest.raises(InputError, match="host"):
        service.vtysh(lab_name, "h0", "show version")
    cap = service.capture(lab_name, f"t0:{prefix}a0", str(tmp_path / "x.pcap"), 1.5, 5)
    assert (tmp_path / "x.pcap").stat().st_size >= 24  # pcap header; keepalives cross it
    assert cap["link"] == f"t0:{prefix}a0"
    with pytest.raises(InputError, match="several"):
        service.capture(lab_name, f"{prefix}n0p0", str(tmp_path / "y.pcap"))
    with pytest.raises(InputError, match="seconds"):
        service.capture(lab_name, f"t0:{prefix}a0", str(tmp_path / "y.pcap"), 1e6)
    r = run_cli("lab", "exec", "--name", lab_name, "--node", "h0", "--command", "ip route")
    assert r.code == 0 and f"{prefix}n0p0" in r.out
    # the positional forms: NODE -- CMD ..., NODE -c CMD
    r = run_cli("lab", "exec", "--name", lab_name, "h0", "--", "ip", "-o", "route", "show")
    assert r.code == 0 and f"{prefix}n0p0" in r.out
    r = run_cli("lab", "vtysh", "t0", "-c", "show bgp summary", "--name", lab_name)
    assert r.code == 0 and "Total number of neighbors 2" in r.out
    assert_input_error(run_cli("lab", "exec", "--name", lab_name, "h0", "h1", "--", "true"))
    assert_input_error(run_cli("lab", "exec", "--name", lab_name, "h0", "--"), "command")


def test_bad_targets_and_flap_bounds():
    plan = make_plan(LabSpec(name="x"))
    for bad, what in [
        ("flap:host=0,nic=0,period=0", "period"),
        ("flap:host=0,nic=0,count=-1", "count"),
        ("flap:host=0,nic=0,count=1000", "count"),
        ("link:host=0,nic=0,prot=1", "takes"),
        ("link:host=0.5,nic=0", "whole"),
        ("tor:segment=nan", "number"),
        ("core:index=0", "--pods 2"),
        ("core:plane=0", "takes"),
    ]:
        with pytest.raises(InputError, match=what):
            parse_target(plan, bad)


def test_not_root_is_one_line(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    for call in (lambda: service.status("x"), lambda: service.traffic("x"),
                 lambda: service.fail("x"), lambda: service.repair("x")):  # fmt: skip
        with pytest.raises(InputError, match="root"):
            call()
