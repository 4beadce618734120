"""``hpn lab exec | vtysh | capture``: a network engineer's way into a running lab (a node's
namespace, a switch's FRR daemons, packets on one interface), each bounded in time."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from hpn.app.base import Command, Outcome
from hpn.app.lab import LabName, LabTables
from hpn.config import Model


class ExecOptions(LabName):
    """The ``[lab]`` table of ``lab exec``."""

    node: str = Field(..., description="node: t0, a1, h3, ... (as lab status names them)")
    command: str = Field(..., description="the command line to run in its namespace")
    timeout: float = Field(30.0, gt=0, le=120, description="seconds before it is stopped")


class ExecConfig(Model):
    lab: ExecOptions


class VtyshOptions(LabName):
    """The ``[lab]`` table of ``lab vtysh``."""

    node: str = Field(..., description="switch: t0, a1, c0, ...")
    command: str | None = Field(None, description="a vtysh command (default: the running config)")


class VtyshConfig(Model):
    lab: VtyshOptions


class CaptureOptions(LabName):
    """The ``[lab]`` table of ``lab capture``."""

    link: str = Field(..., description="an interface of the lab (lab status lists them)")
    out: str = Field(..., min_length=1, description="pcap file to write")
    seconds: float = Field(5.0, gt=0, le=60, description="capture at most this long")
    packets: int = Field(1000, ge=1, le=100_000, description="and at most this many packets")


class CaptureConfig(Model):
    lab: CaptureOptions


@dataclass
class ExecResult(LabTables):
    node: str
    command: list[str]
    returncode: int
    stdout: str
    stderr: str

    title = "hpn lab exec"

    def lines(self) -> list[str] | None:
        return (self.stdout + self.stderr).rstrip("\n").splitlines()


@dataclass
class VtyshResult(LabTables):
    node: str
    command: str | None
    output: str

    title = "hpn lab vtysh"

    def lines(self) -> list[str] | None:
        return self.output.rstrip("\n").splitlines()


@dataclass
class CaptureResult(LabTables):
    link: str
    namespace: str
    out: str
    packets: int | None
    bytes: int

    title = "hpn lab capture"


def exec_cmd(cfg: ExecConfig) -> Outcome:
    import shlex

    from hpn.errors import InputError
    from hpn.lab import service

    try:
        argv = shlex.split(cfg.lab.command)
    except ValueError as err:
        raise InputError("command", f"cannot split it into words: {err}") from None
    x = cfg.lab
    return Outcome(ExecResult.from_dict(service.exec_in(x.name, x.node, argv, x.timeout)))


def vtysh(cfg: VtyshConfig) -> Outcome:
    from hpn.lab import service

    v = cfg.lab
    return Outcome(VtyshResult.from_dict(service.vtysh(v.name, v.node, v.command)))


def capture(cfg: CaptureConfig) -> Outcome:
    from hpn.lab import service

    c = cfg.lab
    out = service.capture(c.name, c.link, c.out, c.seconds, c.packets)
    return Outcome(CaptureResult.from_dict(out))


EXEC = Command("lab exec", ExecConfig, exec_cmd, flags=("lab",), stored=False)
VTYSH = Command("lab vtysh", VtyshConfig, vtysh, flags=("lab",), stored=False)
CAPTURE = Command("lab capture", CaptureConfig, capture, flags=("lab",), stored=False)
