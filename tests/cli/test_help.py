"""Help is drawn as written: typer's rich renderer reads no console markup (``[fabric]``
stayed a tag and vanished) and no emoji codes (``BEGIN:END:FACTOR`` drew ``BEGIN🔚FACTOR``)
in a help text (`hpn.cli.lazy.help_renderer`)."""

from __future__ import annotations

import re

import pytest
import typer.main

from hpn.cli import app
from tests.cli.harness import invoke

BOX = re.compile(r"[│╭╮╰╯─]")


def _commands() -> list[tuple[str, ...]]:
    """Every command's words (``("pool", "simulate")``), groups' commands included."""
    out: list[tuple[str, ...]] = []

    def walk(cmd, words: tuple[str, ...]) -> None:
        sub = getattr(cmd, "lazy", None) or getattr(cmd, "commands", None)
        if sub is None:
            out.append(words)
            return
        for name in list(sub):
            walk(cmd.commands[name], (*words, name))

    walk(typer.main.get_command(app), ())
    return out


COMMANDS = _commands()


def _flat(text: str) -> str:
    """``text`` without the panels' box and with every run of white space one space."""
    return " ".join(BOX.sub(" ", text).split())


def rendered(words: tuple[str, ...], tmp_path) -> str:
    r = invoke([*words, "--help"], tmp_path, {"COLUMNS": "120"})
    assert r.code == 0, r.err
    return _flat(r.out)


def test_collective_help_shows_the_range_syntax_as_written(tmp_path):
    text = rendered(("collective",), tmp_path)
    assert "BEGIN:END:FACTOR" in text
    assert "\N{END WITH LEFTWARDS ARROW ABOVE}" not in text  # rich's :end: emoji
    assert "TOML file: the command's tables ([fabric], ...)" in text
    assert "[default: allreduce]" in text and "(allreduce)" not in text  # as written
    assert "nccl (NCCL's tuner" in text and "Nccl" not in text  # a value is not capitalized


@pytest.mark.parametrize("words", COMMANDS, ids=" ".join)
def test_every_help_text_of_every_command_is_drawn_as_written(words, tmp_path):
    cmd = typer.main.get_command(app)
    for w in words:
        cmd = cmd.commands[w]
    text = rendered(words, tmp_path)
    first = _flat((cmd.help or "").split("\n\n")[0])
    assert first in text, (first, text[:400])
    for p in cmd.params:
        helptext = _flat(getattr(p, "help", None) or "")
        assert helptext in text, (p.name, helptext)
    assert "default None" not in text  # a knob without a default says what unset means


def test_the_artifact_knob_says_what_its_absence_means(tmp_path):
    text = rendered(("pool", "simulate"), tmp_path)
    assert "--costs artifact needs it, fitted costs take none" in text
    assert "serverless-artifact: no-token failure time" in text  # the policy as named
