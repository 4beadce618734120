"""Plug-ins are installed packages' entry points: a policy (with its knob as a flag), a
fabric preset and a command appear in the CLI, the configs and the registries."""

from __future__ import annotations

import json

from tests.conftest import install_plugin, run_cli

ENTRIES = {
    "hpn.policies": {"few": "tests.plugin_example:Few"},
    "hpn.presets": {"mini-tree": "tests.plugin_example:MINI"},
    "hpn.commands": {"echo": "tests.plugin_example:ECHO"},
}


def test_an_installed_policy_preset_and_command_are_usable(monkeypatch, tmp_path):
    install_plugin(monkeypatch, tmp_path, ENTRIES)
    base = ["pool", "simulate", "--models", "4", "--gpus", "4", "--duration", "60s", "--json"]
    one, three = (run_cli(*base, "--policy", "few", "--served", n) for n in ("1", "3"))
    assert one.code == 0 and three.code == 0, one.err + three.err
    assert one.json()["unserved_models"] == 3 and three.json()["unserved_models"] == 1
    r = run_cli("pool", "simulate", "--help")
    assert "--served" in r.out and "few" in r.out
    r = run_cli(*base, "--policy", "aegaeon", "--served", "2")
    assert r.code == 2 and "applies to policy few, not aegaeon" in r.err
    r = run_cli("topo", "summary", "--preset", "mini-tree", "--json")
    assert r.code == 0, r.err
    assert r.json()["hosts"] == 16  # k^3/4
    r = run_cli("topo", "summary", "--preset", "mini-tree", "--k", "10", "--json")
    assert r.code == 2 and "fabric.k" in r.err
    r = run_cli("echo", "--json")
    assert r.code == 0 and json.loads(r.out)["words"] == 0, r.err
    assert "echo" in run_cli("--help").out


def test_a_plugin_that_does_not_load_is_one_line(monkeypatch, tmp_path):
    install_plugin(monkeypatch, tmp_path, {"hpn.commands": {"broken": "no_such_module:X"}})
    r = run_cli("broken", "--json")
    assert r.code == 2 and "Traceback" not in r.err
    assert "cannot load no_such_module:X" in r.err
