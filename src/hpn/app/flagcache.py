"""A kept copy of every command's :class:`~hpn.app.flags.CommandFlags`, so that ``hpn CMD
--help`` builds its page without importing the command's module, its config models or pydantic.

The copy is a write-through user cache (``platformdirs``: ``~/.cache/hpn/flags/ROOT/CMD.json``,
``ROOT`` a hash of where this hpn lives, so checkouts do not overwrite each other's): the first
process that derives a command's flags from its models (:func:`get`) keeps them there, with a
checksum of every source file loaded by then: the hpn modules (the command's module, its config
models and what they import) and pydantic's version file. :func:`cached` returns a command's
flags only while every one of those files still has its checksum and no plug-in is installed;
otherwise (an edited model, another pydantic) the caller derives them again and rewrites the
copy. So the copy can be stale, which only makes that one help slower, but never wrong; nothing
generated is committed, and an unwritable cache only costs the derivation.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import zlib

from hpn.app.flags import CommandFlags

PLUGIN_GROUPS = ("hpn.commands", "hpn.policies", "hpn.presets")
"""Entry-point groups whose plug-ins add flags (a policy's knobs, a preset's fields)."""


def folder() -> str:
    """Where this hpn's copies are kept (``$XDG_CACHE_HOME`` moves it: ``platformdirs``)."""
    from platformdirs import user_cache_dir

    root = hashlib.sha1(_roots()["hpn"].encode()).hexdigest()[:12]
    return os.path.join(user_cache_dir("hpn"), "flags", root)


def path_of(name: str) -> str:
    """The kept copy of command ``name``."""
    return os.path.join(folder(), name.replace(" ", "-") + ".json")


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


def _plugins() -> bool:
    from hpn.registry import declared

    return declared(*PLUGIN_GROUPS)


def cached(name: str) -> CommandFlags | None:
    """The kept flags of command ``name``, or None when missing or stale (see the module), or
    when a plug-in is installed (its knobs and fields are flags the copy does not have)."""
    if _plugins():
        return None
    try:
        with open(path_of(name), encoding="utf-8") as fh:
            entry = json.load(fh)
        if not _fresh(entry["files"], _roots()):
            return None
        return CommandFlags.from_json(entry["flags"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def get(name: str) -> CommandFlags:
    """The flags of command ``name``: the kept copy while current, else derived from its models
    and kept (write-through)."""
    flags = cached(name)
    if flags is None:
        flags = flags_of(name)
        keep(name, flags)
    return flags


def keep(name: str, flags: CommandFlags) -> None:
    """Keep ``flags`` of command ``name`` with the checksums of the sources loaded now (a cache
    that cannot be written is left alone)."""
    if _plugins():
        return  # derived with a plug-in's flags: not what a plain start-up should see
    path = path_of(name)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump({"flags": flags.to_json(), "files": _sources()}, fh)
        os.replace(tmp, path)
    except OSError:
        if os.path.exists(tmp):
            os.unlink(tmp)


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
