"""No root needed: reading ``ip -ts monitor route`` back (when each switch last re-routed
during a failure; the texts are written here as ``ip`` prints them), and ``fail`` waiting for
a BGP lab to converge before it breaks anything."""

from __future__ import annotations

import datetime

from hpn.lab.routewatch import last_changes, stamp


def _at(s: str) -> float:
    return datetime.datetime.fromisoformat(s).timestamp()


def test_stamp_reads_ips_local_time_to_the_microsecond():
    line = "[2026-12-02T15:05:29.930311] 10.0.0.0/30 via 100.64.0.33 dev x proto bgp metric 20"
    assert stamp(line) == _at("2026-12-02T15:05:29.930311")
    assert stamp("        nexthop via 100.64.0.35 dev y weight 1") is None  # a continuation
    assert stamp("") is None


def test_last_change_per_switch_between_failure_and_repair():
    fail, repair = _at("2026-12-02T15:05:29.806334"), _at("2026-12-02T15:05:30.802396")
    texts = {
        "t0": "[2026-12-02T15:05:29.884490] 10.0.0.4/30 via 100.64.0.25 dev a0\n"
        "[2026-12-02T15:05:29.884582] 10.0.0.5 via 100.64.0.25 dev a0\n"
        "[2026-12-02T15:05:30.817230] 100.64.0.26/31 dev a1 proto kernel\n",  # the repair's
        "t2": "[2026-12-02T15:05:29.700000] 10.0.0.0/30 via 100.64.0.33 dev a0\n"  # before
        "[2026-12-02T15:05:29.930311] 10.0.0.0/30 via 100.64.0.33 dev a0\n"
        "\tnexthop via 100.64.0.35 dev a1 weight 1\n",
        "t3": "",
        "a1": "[2026-12-02T15:05:30.811289] 100.64.0.26/31 dev t0 dead linkdown\n",
    }
    got = last_changes(texts, fail, repair)
    assert set(got) == {"t0", "t2"}  # t3 never changed, a1 only after the repair
    assert abs(got["t0"] - 0.0782) < 1e-4 and abs(got["t2"] - 0.124) < 1e-4


def test_fail_waits_for_bgp_before_it_breaks_anything(monkeypatch):
    """A BGP lab is waited for until converged (a previous repair's sessions take seconds to
    come back) before any flow starts or link goes down; a static lab is not."""
    import contextlib
    from types import SimpleNamespace

    from hpn.lab import bgp, fail, impair, ops

    calls: list[str] = []

    class Stop(Exception):
        pass

    def converged(plan, hops, timeout):
        calls.append(f"wait {timeout:g}")
        return 0.0

    def started(*args, **kwargs):
        calls.append("fail")
        raise Stop

    plan = SimpleNamespace(prefix="hlx", spec=SimpleNamespace(control="bgp"))
    monkeypatch.setattr(fail, "load", lambda name: (plan, None))
    monkeypatch.setattr(fail, "parse_target", lambda plan, text: ("link", [0], {}))
    monkeypatch.setattr(fail.netns, "locked", lambda *a: contextlib.nullcontext())
    monkeypatch.setattr(ops, "link_state", lambda plan: ({}, []))
    monkeypatch.setattr(impair, "impaired", lambda plan: [])
    monkeypatch.setattr(fail, "switch_next_hops", lambda plan: {})
    monkeypatch.setattr(bgp, "wait_converged", converged)
    monkeypatch.setattr(fail, "_fail", started)
    for control, want in (("bgp", ["wait 30", "fail"]), ("static", ["fail"])):
        plan.spec.control, calls[:] = control, []
        with contextlib.suppress(Stop):
            fail.fail("x")
        assert calls == want, control
