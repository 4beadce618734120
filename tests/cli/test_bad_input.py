"""The bad-input corpus (tests/cli/corpus.py) through ``hpn``, in-process.

Every case: exit code 2, exactly one line on stderr containing the case's fragments, no
traceback, nothing on stdout, nothing written (working folder, store and input files as they
were). Known gaps are strict xfails, so fixing one makes its mark fail until it is removed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.corpus import CORPUS, SETUPS, make_inputs
from tests.cli.harness import invoke, snapshot

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    return make_inputs(tmp_path_factory.mktemp("inputs"))


def _norm(text: str) -> str:
    return text.replace("_", "-").lower()


def matches(fragment: str, line: str) -> bool:
    """``fragment`` in ``line``, ``_`` and ``-`` alike (``link_rate`` is ``--link-rate``);
    ``a|b`` matches either wording (``> 0|greater than 0``)."""
    return any(_norm(alt) in _norm(line) for alt in fragment.split("|"))


def _param(case):
    # a case with no stated limit yet computes for minutes before failing: not run
    slow = bool(case.known) and case.known.startswith("limits: no stated bound")
    marks = [pytest.mark.xfail(reason=case.known, strict=True, run=not slow)] if case.known else []
    return pytest.param(case, id=case.id, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CORPUS])
def test_bad_input_is_one_line_exit_2_and_nothing_written(case, inputs, tmp_path, monkeypatch):
    cwd, store = tmp_path / "cwd", tmp_path / "store"
    cwd.mkdir()
    monkeypatch.setenv("HPN_RUNS_DIR", str(store))

    def expand(text: str) -> str:
        return text.replace("{F}", str(inputs)).replace("{R}", str(REPO))

    if case.setup:
        SETUPS[case.setup](cwd)
    before = snapshot(cwd, store, inputs)
    env = {"HPN_RUNS_DIR": str(store)} | {k: expand(v) for k, v in case.env.items()}
    r = invoke([expand(a) for a in case.args], cwd, env)
    lines = [ln for ln in r.err.splitlines() if ln.strip()]
    assert "Traceback" not in r.err, r.err
    assert r.code == 2, (r.code, r.err[-500:])
    assert len(lines) == 1, r.err
    for frag in case.fragments:
        assert matches(frag, lines[0]), (frag, lines[0])
    assert r.out == ""
    assert snapshot(cwd, store, inputs) == before, "something was written"


def _commands() -> set[str]:
    """Every leaf command of the typer app, as ``"group sub"`` strings."""
    import typer.main

    from hpn.cli import app

    def walk(cmd, prefix: str) -> set[str]:
        subs = getattr(cmd, "commands", None)
        if not subs:
            return {prefix.strip()}
        return set().union(*(walk(c, f"{prefix} {n}") for n, c in subs.items()))

    return walk(typer.main.get_command(app), "")


def test_corpus_covers_every_command():
    have = {c.command for c in CORPUS}
    missing = sorted(_commands() - have)
    assert not missing, (
        f"no bad-input case for {missing}: add a cases('COMMAND', [...]) block to "
        "tests/cli/corpus.py (see its docstring)"
    )
    assert len(CORPUS) >= 120


def test_a_failing_real_system_is_one_line_and_exit_1(monkeypatch, tmp_path):
    """A lab's routing daemons that do not converge are not bad input (exit 2) and not a crash
    (a traceback): one line naming what failed, exit code 1."""
    from hpn.lab.netns import LabError

    def failing_app(args, standalone_mode):
        raise LabError("BGP did not converge in 10 s: t0 lacks 10.0.0.4/30 via a0, a1")

    monkeypatch.setattr("hpn.cli.app", failing_app)
    r = invoke(["lab", "repair"], tmp_path, {})
    assert r.code == 1 and "Traceback" not in r.err, r.err
    assert r.err == "error: BGP did not converge in 10 s: t0 lacks 10.0.0.4/30 via a0, a1\n"
