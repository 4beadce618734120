"""A kept copy of every command's :class:`~hpn.app.flags.CommandFlags`, so that ``hpn CMD
--help`` builds its page without importing the command's module, its config models or pydantic.

The copy (``flags.json`` beside this module, written by ``make docs`` through :func:`write`)
records, for each command, the flags and a checksum of every source file that deriving them
loaded: the hpn modules (the command's module, its config models and what they import) and
pydantic's version file. :func:`cached` returns a command's flags only while every one of those
files still has its checksum; otherwise (an edited model, another pydantic) the caller derives
them from the models again (:func:`flags_of`). So the copy can be
stale, which only makes help slower, but never wrong. ``tests/test_reference.py`` checks that it
is current and that it equals what the models give.
"""

from __future__ import annotations

import json
import os
import sys
import zlib
from typing import Any

from hpn.app.flags import CommandFlags

PATH = os.path.join(os.path.dirname(__file__), "flags.json")
"""Where the copy is kept (inside the package, so an installed hpn has it too)."""

_loaded: dict[str, Any] | None = None


def _roots() -> dict[str, str]:
    """Where each source-file prefix lives: ``hpn`` and ``pydantic`` (found, not imported)."""
    import importlib.util

    roots = {"hpn": os.path.dirname(os.path.dirname(__file__))}
    spec = importlib.util.find_spec("pydantic")
    if spec is not None and spec.submodule_search_locations:
        roots["pydantic"] = list(spec.submodule_search_locations)[0]
    return roots


def _checksum(path: str) -> str | None:
    """``"SIZE:CRC32"`` of a file's bytes (None: unreadable)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    return f"{len(data)}:{zlib.crc32(data)}"


def _fresh(files: dict[str, str | None], roots: dict[str, str]) -> bool:
    for name, kept in files.items():
        prefix, _, rel = name.partition(":")
        if kept is None or prefix not in roots:
            return False
        if _checksum(os.path.join(roots[prefix], rel)) != kept:
            return False
    return True


PLUGIN_GROUPS = ("hpn.commands", "hpn.policies", "hpn.presets")
"""Entry-point groups whose plug-ins add flags (a policy's knobs, a preset's fields)."""


def cached(name: str) -> CommandFlags | None:
    """The kept flags of command ``name``, or None when missing or stale (see the module), or
    when a plug-in is installed (its knobs and fields are flags the copy does not have)."""
    from hpn.registry import declared

    global _loaded
    if any(declared(g) for g in PLUGIN_GROUPS):
        return None
    if _loaded is None:
        try:
            with open(PATH, encoding="utf-8") as fh:
                _loaded = json.load(fh)
        except (OSError, ValueError):
            _loaded = {}
    entry = (_loaded or {}).get("commands", {}).get(name)
    if entry is None:
        return None
    if not _fresh(entry["files"], _roots()):
        return None
    return CommandFlags.from_json(entry["flags"])


def flags_of(name: str) -> CommandFlags:
    """The flags of command ``name``, derived from its config models now."""
    from hpn.app import COMMANDS
    from hpn.app.flags import command_flags

    return command_flags(COMMANDS.get(name), COMMANDS.summary(name))


def _sources() -> dict[str, str | None]:
    """Checksums of the hpn source files loaded so far, and of pydantic's version file."""
    roots = _roots()
    out = {}
    for mod in list(sys.modules.values()):
        path = getattr(mod, "__file__", None) or ""
        if mod.__name__.partition(".")[0] == "hpn" and path.startswith(roots["hpn"] + os.sep):
            rel = os.path.relpath(path, roots["hpn"]).replace(os.sep, "/")
            out[f"hpn:{rel}"] = _checksum(path)
    out["pydantic:version.py"] = _checksum(os.path.join(roots["pydantic"], "version.py"))
    return dict(sorted(out.items()))


_PROBE = """
import json, sys
from hpn.app.flagcache import _sources, flags_of
flags = flags_of(sys.argv[1]).to_json()
print(json.dumps({"flags": flags, "files": _sources()}))
"""


def build() -> dict[str, Any]:
    """The copy for every command: each derived in a fresh interpreter, so that its files are
    exactly those deriving its flags loaded."""
    import subprocess

    from hpn.app import COMMANDS

    src = os.path.dirname(_roots()["hpn"])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    commands = {}
    for name in COMMANDS:
        p = subprocess.run(
            [sys.executable, "-c", _PROBE, name],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        commands[name] = json.loads(p.stdout)
    return {"commands": commands}


def write(path: str = PATH) -> str:
    """Write the copy (``make docs`` does); returns its path."""
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(build(), indent=1, sort_keys=True) + "\n")
    return path
