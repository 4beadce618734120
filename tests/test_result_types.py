"""Results match their declared types, nested parts included; readers name declared fields.

Each command below runs through the CLI with ``--json``; its output must equal the golden
file under ``tests/golden/`` (made by the code before its nested parts were typed; timing
fields aside) and must fit the command's result class: every key of a ``TypedDict`` part
declared, every required one present, every value of its declared type. So a key renamed in
the code that builds a result fails here even where no type checker sees the builder. The
headline figures the run lists show (:data:`hpn.store.headline.HEADLINE`) and the figures the
plot kinds read (:data:`hpn.plots.kinds.RESULT_READS`) must be dotted paths the command's
result declares, so a renamed field cannot silently drop out of them.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
import typing
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.shapes import declares, fits, namespace

GOLDEN = Path(__file__).parent / "golden"
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
VOLATILE = re.compile(r'"(wall_s|build_s|peak_rss_mb)": [0-9.eE+-]+')

CASES = {  # golden file: (command line, result class)
    "route-paths": ("route paths --preset hpn --segments 2", "hpn.app.route:PathsResult"),
    "route-select": (
        "route select --preset hpn --segments 2 --src 0:0 --dst 200:3 --connections 4",
        "hpn.app.route:SelectResult",
    ),
    "train-four-jobs": (
        f"train {EXAMPLES}/train/four-allreduce-jobs.toml --segments 1",
        "hpn.app.train:TrainResult",
    ),
    "fail-crash": (
        f"fail {EXAMPLES}/failures/dp-step.toml --segments 1"
        " --fault link:host=1,nic=3,port=0,at=2s,repair=100s"
        " --fault link:host=1,nic=3,port=1,at=2s,repair=100s",
        "hpn.app.fail:FailResult",
    ),
    "reliability": (
        "reliability --trials 200 --months 2 --gpus 512 --price 2.5",
        "hpn.app.fail:ReliabilityResult",
    ),
    "pool-capacity": (
        f"pool capacity --mix {EXAMPLES}/pool/mix.toml --duration 2min",
        "hpn.app.pool:CapacityResult",
    ),
    "pool-policies": ("pool policies", "hpn.app.pool:PoliciesResult"),
    "topo-summary-frontend": (
        "topo summary --preset hpn --segments 1 --frontend",
        "hpn.app.topo:SummaryResult",
    ),
}


def _cls(target: str) -> type:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_json_is_unchanged_and_fits_its_types(name):
    line, target = CASES[name]
    r = run_cli(*line.split(), "--json")
    assert r.code == 0, r.err
    assert VOLATILE.sub(r'"\1": 0', r.out) == (GOLDEN / f"{name}.json").read_text()
    fits(json.loads(r.out), _cls(target), name)


def test_the_check_catches_a_renamed_nested_key():
    from hpn.app.route import PathsResult

    good = json.loads((GOLDEN / "route-paths.json").read_text())
    fits(good, PathsResult, "ok")
    bad = json.loads(json.dumps(good).replace('"per_plane"', '"planes"'))
    with pytest.raises(AssertionError, match="not declared in PairPaths"):
        fits(bad, PathsResult, "renamed")


def _result_class(command: str) -> type:
    from hpn.app import COMMANDS

    service = COMMANDS.get(command).service
    ns = namespace(sys.modules[service.__module__])
    outcome = typing.get_type_hints(service, globalns=ns)["return"]
    return typing.get_args(outcome)[0]


@pytest.mark.parametrize("reader", ["hpn.store.headline:HEADLINE", "hpn.plots.kinds:RESULT_READS"])
def test_figures_readers_name_are_declared_result_fields(reader):
    missing = [
        f"{command}: {key}"
        for command, keys in _cls(reader).items()
        for key in keys
        if not declares(_result_class(command), key)
    ]
    assert not missing, f"figures no result declares: {missing}"
