"""The positional forms of ``hpn lab exec NODE -- CMD ...`` and ``hpn lab vtysh NODE [-c CMD]``,
rewritten into their flag forms (``--node NODE --command "CMD ..."``) before the command line
is parsed; the flag forms keep working. Imports nothing."""

from __future__ import annotations

import shlex

_VALUED = {"--name", "--node", "--command", "--timeout", "--config"}


def rewrite(argv: list[str]) -> list[str]:
    """``argv`` (without the program name) with the lab's positional forms as flags.

    Examples
    --------
    >>> rewrite(["lab", "exec", "t0", "--", "ip", "-br", "addr"])
    ['lab', 'exec', '--node', 't0', '--command', 'ip -br addr']
    >>> rewrite(["lab", "vtysh", "--name", "x", "a1", "-c", "show bgp summary"])
    ['lab', 'vtysh', '--name', 'x', '--node', 'a1', '--command', 'show bgp summary']
    """
    if len(argv) < 2 or argv[0] != "lab" or argv[1] not in ("exec", "vtysh"):
        return argv
    head, rest = argv[:2], argv[2:]
    words: list[str] = []
    if head[1] == "exec" and "--" in rest:
        cut = rest.index("--")
        rest, words = rest[:cut], rest[cut + 1 :]
    out: list[str] = []
    node = None
    i = 0
    while i < len(rest):
        a = rest[i]
        if a == "-c" and head[1] == "vtysh":
            a = "--command"
        if a in _VALUED and i + 1 < len(rest):
            out += [a, rest[i + 1]]
            i += 2
            continue
        if not a.startswith("-") and node is None:
            node = a
        else:
            out.append(a)
        i += 1
    if node is not None:
        out += ["--node", node]
    if words:
        out += ["--command", shlex.join(words)]
    return head + out
