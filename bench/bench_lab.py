"""Lab bring-up speed, and failover with and without BFD.

Bring-up: small HPN labs (<= 40 namespaces) come up in seconds.

Target (issue 16): a lab of <= 40 namespaces up in seconds. The reference, measured in the
same run, builds the same namespaces and veth pairs with one ``ip`` process per command (the
way a shell script does it); the ratio shows what the lab's batching buys. Needs root.

    .venv/bin/python bench/bench_lab.py [--failover [--seeds 0,1,2]]

``--failover`` (FRR and nftables needed): on the default lab, silent (carrier up, every packet
dropped), one-direction and gray (10 % dropped) failures of a ToR uplink and a NIC link, each
without BFD (BGP's hold time, 3 s, detects a silent uplink) and with BFD (100 ms x 3); per
run the packets lost and the longest gap toward and from the NICs under the failure, and how
many connections the model puts across the failed link; ``--seeds`` draws the source ports
anew per seed (which connections cross the link is a matter of their hashes).
"""

from __future__ import annotations

import subprocess
import sys
import time

from hpn.lab import bgp, netns, service
from hpn.lab.plan import LabSpec, make_plan


def naive_build(spec: LabSpec) -> float:
    """Namespaces and veths only, one ``ip`` per command; returns seconds (then removes)."""
    plan = make_plan(spec)
    src = plan.fabric.links.src
    t0 = time.perf_counter()
    for n in plan.namespaces:
        subprocess.run(["ip", "netns", "add", n], check=True)
    for ln in plan.links[0::2]:
        ln = int(ln)
        a, b = plan.ns(int(src[ln])), plan.ns(int(src[ln ^ 1]))
        subprocess.run(
            [
                "ip",
                "link",
                "add",
                plan.ifname[ln],
                "netns",
                a,
                "type",
                "veth",
                "peer",
                "name",
                plan.ifname[ln ^ 1],
                "netns",
                b,
            ],
            check=True,
        )
        for ns, name in ((a, plan.ifname[ln]), (b, plan.ifname[ln ^ 1])):
            subprocess.run(["ip", "-n", ns, "link", "set", name, "up"], check=True)
    wall = time.perf_counter() - t0
    netns.remove_lab(plan.prefix)
    return wall


FAILURES = [
    "silent:segment=0,rail=0,plane=0,uplink=0",
    "silent:segment=0,rail=0,plane=0,uplink=0,dir=up",
    "gray:segment=0,rail=0,plane=0,uplink=0,loss=0.1",
    "silent:host=0,nic=0,port=0",
    "link:host=0,nic=0,port=0",
]


def failover(name: str = "bq", seeds: tuple[int, ...] = (0,)) -> None:
    """Loss and gap per failure, BFD off and on (one lab each), per source-port seed: each
    seed draws the connections' source ports anew, so which of them cross the failed link."""
    from hpn.lab.fail import fail

    print(
        "failure | BFD | seed | toward the NICs: lost, longest gap | from them: lost, gap "
        "| connections crossing (model)"
    )
    for bfd in (False, True):
        service.up(LabSpec(name=name, control="bgp", bfd=bfd, bfd_interval_ms=100))
        try:
            for target in FAILURES:
                for seed in seeds:
                    r = fail(name, target, repair=4.0, before=1.0, after=1.5, seed=seed)
                    t, f = r["to_nic"], r["from_nic"]
                    print(
                        f"{target} | {'100 ms x 3' if bfd else 'off'} | {seed} | "
                        f"{t['packets_lost']} of {t['packets_sent']}, {t['max_gap_s']} s "
                        f"(cut off {t['flows_cut_off']}) | {f['packets_lost']} of "
                        f"{f['packets_sent']}, {f['max_gap_s']} s (cut off {f['flows_cut_off']}) "
                        f"| {r['model']['flows_crossing']} of {r['model']['flows']}",
                        flush=True,
                    )
        finally:
            service.down(name)


def main() -> None:
    reason = netns.available()
    if reason:
        print(f"skipped: {reason}")
        sys.exit(0)
    if "--failover" in sys.argv[1:]:
        if bgp.missing(bfd=True):
            print(f"skipped: {bgp.missing(bfd=True)}")
            sys.exit(0)
        args = sys.argv[1:]
        seeds = (0,)
        if "--seeds" in args:
            seeds = tuple(int(x) for x in args[args.index("--seeds") + 1].split(","))
        failover("bq", seeds)
        return
    cases = [
        ("2 segments x 2 hosts, static", dict(control="static")),
        ("4 segments x 6 hosts, static", dict(control="static", segments=4, hosts_per_segment=6)),
    ]
    if not bgp.missing():
        cases += [
            ("2 segments x 2 hosts, BGP", dict(control="bgp")),
            ("4 segments x 6 hosts, BGP", dict(control="bgp", segments=4, hosts_per_segment=6)),
        ]
    worst = 0.0
    for label, kw in cases:
        spec = LabSpec(name="bq", **kw)
        t0 = time.perf_counter()
        st = service.up(spec)
        wall = time.perf_counter() - t0
        service.down("bq")
        worst = max(worst, wall)
        conv = f", BGP converged in {st['converge_s']:.2f} s" if st["converge_s"] else ""
        print(
            f"lab up, {label}: {wall:5.2f} s ({st['namespaces']} namespaces, "
            f"{st['links']} links{conv})"
        )
    spec = LabSpec(name="bq", control="static", segments=4, hosts_per_segment=6)
    ref = naive_build(spec)
    t0 = time.perf_counter()
    service.up(spec)
    ours = time.perf_counter() - t0
    service.down("bq")
    print(f"reference: same namespaces and veths, one ip process per command: {ref:.2f} s")
    print(f"lab up (static, with addresses, rates, sysctls, routes) / reference: {ours / ref:.2f}")
    print(
        f"target: <= 40 namespaces up in seconds: worst {worst:.2f} s "
        f"({'met' if worst <= 10 else 'MISSED'} at <= 10 s)"
    )


if __name__ == "__main__":
    main()
