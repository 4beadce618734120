"""Every file under examples/ is loaded by its command's parser; the small ones run end to end."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
FILES = sorted(p for p in EXAMPLES.rglob("*") if p.is_file())


def _load(path: Path) -> None:
    """Parse ``path`` the way the command that takes it does (InputError if it is bad)."""
    from hpn.app import command
    from hpn.app.fail import load_job_file as fail_file
    from hpn.app.topo import load_prices
    from hpn.app.train import load_job_file as train_file
    from hpn.config import load_toml
    from hpn.pool.mixes import load_mix
    from hpn.sweep import load_sweep, points

    kind = path.parent.name
    if kind == "train":
        command("train").parse(train_file(path))
    elif kind == "failures":
        data = fail_file(path)
        data["fail"] = {"faults": ["link:host=0,nic=0,at=1s,repair=2s"]}
        command("fail").parse(data)
    elif kind == "sweeps":
        spec = load_sweep(path)
        cmd = command(spec.command)
        for p in points(spec):
            cmd.parse(p.config)
    elif kind == "fabric" and path.name == "prices.toml":
        command("topo bom").parse(load_prices(path))
    elif kind == "fabric":
        command("topo summary").parse(load_toml(path))
    elif kind == "pool" and path.suffix == ".toml":
        load_mix(str(path))
    elif path.suffix == ".md":
        assert path.read_text().strip()
    else:
        raise AssertionError(f"{path}: no loader for this example; add one here")


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_example_loads(path):
    _load(path)


SMALL = [
    ("topo", "summary", "--config", "fabric/hpn-2pods.toml", "--json"),
    ("topo", "bom", "--segments", "1", "--prices", "fabric/prices.toml", "--json"),
    (
        "fail",
        "failures/dp-step.toml",
        "--fault",
        "link:host=1,nic=3,port=0,at=1s,repair=2s",
        "--json",
    ),
    ("train", "train/llama-7b-448.toml", "--segments", "1", "--json"),
    ("pool", "capacity", "--mix", "pool/mix.toml", "--duration", "1min", "--json"),
]


@pytest.mark.parametrize("args", SMALL, ids=lambda a: " ".join(a[:2]))
def test_small_example_runs(args):
    r = run_cli(*args, cwd=str(EXAMPLES))
    assert r.code == 0, r.err
    assert isinstance(r.json(), dict)
