"""Measures of the HPN paper's claims (SIGCOMM 2024), each from the model's commands."""

from __future__ import annotations

from typing import Any

from hpn.reproduce.context import Context
from hpn.reproduce.measure import Measured, gain, measure

Jobs = dict[str, dict[str, Any]]
CLOS = {"dual_tor": False, "rail_optimized": False, "dual_plane": False}
FABRICS = (("DCN+", "dcn-plus", "ecmp"), ("HPN", "hpn", "hpn"))  # each with its own routing
SIZES = "1M,4M,16M,64M,256M,1G,4G"
PAPER_NCCL = "2.18.3"  # the release the paper measured with (P §9, its test-bed table)
LINK = "link:host=12,nic=3,port=0,at=10s,repair=100s"
FLAP = "flap:host=12,nic=3,port=0,at=10s,down=10s"  # the model's assumed flap (failures.md)


def _summary(ctx: Context, label: str, **fabric: Any) -> dict[str, Any]:
    return ctx.run("topo summary", {"fabric": {"preset": "hpn", **fabric}}, label)


def _per_segment(s: dict[str, Any]) -> int:
    return s["gpus"] // s["segments"]


@measure("tab2_tier1")
def tab2_tier1(ctx: Context, jobs: Jobs) -> Measured:
    """GPUs per segment as Table 2 adds dual-ToR, then rail-optimized wiring."""
    steps: tuple[tuple[str, dict[str, Any]], ...] = (
        ("51.2T Clos", {**CLOS, "agg_oversubscription": 1}),
        ("+ dual-ToR", {**CLOS, "dual_tor": True, "agg_oversubscription": 1}),
        ("+ rail-optimized", {"dual_plane": False, "agg_oversubscription": 1}),
    )
    got = [(name, _per_segment(_summary(ctx, f"tab2 {name}", **f))) for name, f in steps]
    pts: list[list[Any]] = [list(p) for p in got]
    return Measured(got[-1][1], {"model": pts}, ", ".join(f"{n}: {v}" for n, v in got))


@measure("tab2_tier2")
def tab2_tier2(ctx: Context, jobs: Jobs) -> Measured:
    """GPUs per Pod as Table 2 adds dual-plane, then the 15:1 Agg-Core ratio."""
    steps: tuple[tuple[str, dict[str, Any]], ...] = (
        ("+ dual-plane", {"agg_oversubscription": 1}),
        ("+ Agg-Core 15:1", {}),
    )
    got = [(name, int(_summary(ctx, f"tab2 {name}", **f)["gpus"])) for name, f in steps]
    pts: list[list[Any]] = [list(p) for p in got]
    return Measured(got[-1][1], {"model": pts}, ", ".join(f"{n}: {v}" for n, v in got))


@measure("tab2_baseline_pod")
def tab2_baseline_pod(ctx: Context, jobs: Jobs) -> Measured:
    """GPUs per Pod of the single-ToR, single-plane Clos with 1:1 Aggs."""
    s = _summary(ctx, "tab2 51.2T Clos", **CLOS, agg_oversubscription=1)
    return Measured(
        s["gpus"], {"model": [["Clos baseline", s["gpus"]]]}, f"{s['segments']} segments"
    )


@measure("pod_tor_agg_links")
def pod_tor_agg_links(ctx: Context, jobs: Jobs) -> Measured:
    """ToR-Agg links of the HPN Pod."""
    s = _summary(ctx, "hpn pod")
    return Measured(s["links"]["tor_agg"], {"model": [["ToR-Agg links", s["links"]["tor_agg"]]]})


@measure("pod_aggs")
def pod_aggs(ctx: Context, jobs: Jobs) -> Measured:
    """Aggregation switches of the HPN Pod."""
    s = _summary(ctx, "hpn pod")
    return Measured(s["switches"]["agg"], {"model": [["Aggs", s["switches"]["agg"]]]})


@measure("tor_oversubscription")
def tor_oversubscription(ctx: Context, jobs: Jobs) -> Measured:
    """The ToR's downlink / uplink capacity."""
    s = _summary(ctx, "hpn pod")
    v = s["tor_oversubscription"]
    return Measured(v, {"model": [["ToR", v]]})


@measure("search_space")
def search_space(ctx: Context, jobs: Jobs) -> Measured:
    """Candidate paths the host searches (one plane's source-ToR uplinks)."""
    r = ctx.run("route paths", {"fabric": {"preset": "hpn"}}, "hpn pod paths")
    return Measured(
        r["search_space"],
        {"model": [["HPN Pod", r["search_space"]]]},
        f"both planes: {r['search_space_both_planes']}",
    )


def _bom(ctx: Context, chip: str) -> dict[str, Any]:
    return ctx.run("topo bom", {"fabric": {"preset": "hpn", "chip": chip}}, f"bom {chip}")


@measure("chip_power")
def chip_power(ctx: Context, jobs: Jobs) -> Measured:
    """Chip power of 51.2T over 25.6T (Fig 9a's curve, the model's input)."""
    new, old = _bom(ctx, "51.2T")["chip"]["power_w"], _bom(ctx, "25.6T")["chip"]["power_w"]
    return Measured(
        gain(new, old), {"model": [["25.6T", old], ["51.2T", new]]}, f"{old} W -> {new} W"
    )


@measure("heat_sinks")
def heat_sinks(ctx: Context, jobs: Jobs) -> Measured:
    """Heat sinks whose limit covers the 51.2T chip's power."""
    th = _bom(ctx, "51.2T")["thermal"]
    names = {"heat_pipe": "heat pipe", "vendor_vapor_chamber": "vendor VC"}
    names["optimized_vapor_chamber"] = "Alibaba VC"
    pts = [[names.get(k, k), v["limit_w"]] for k, v in th.items()]
    fits = [names.get(k, k) for k, v in th.items() if v["fits"]]
    return Measured(len(fits), {"model": pts}, "fits: " + (", ".join(fits) or "none"))


@measure("crashes_per_month")
def crashes_per_month(ctx: Context, jobs: Jobs) -> Measured:
    """Crashes per month of a 3,072-GPU job on single-ToR, Monte Carlo over 12 months."""
    rel = {"gpus": 3072, "months": 12}
    cfg: dict[str, Any] = {"fabric": {"preset": "hpn", "dual_tor": False}, "reliability": rel}
    r = ctx.run("reliability", cfg, "3K-GPU job single-ToR")
    c = r["crashes_per_month"]
    dual = ctx.run("reliability", {**cfg, "fabric": {"preset": "hpn"}}, "3K-GPU job dual-ToR")
    d = dual["crashes_per_month"]["mean"]
    return Measured(
        round(c["mean"], 3),
        {"model": [["single-ToR", c["mean"]], ["dual-ToR", d]]},
        f"single-ToR mean {c['mean']:.2f}, dual-ToR {d:.2f} per month",
    )


def _polarization(ctx: Context, dual_plane: bool) -> dict[str, Any]:
    cfg = {
        "fabric": {"preset": "hpn", "segments": 2, "dual_plane": dual_plane},
        "polarization": {"routing": "ecmp", "seed": 1, "bond_hash": "rr"},
    }
    return ctx.run(
        "route polarization", cfg, "polarization " + ("dual" if dual_plane else "single") + "-plane"
    )


def _ratio(r: dict[str, Any]) -> float:
    v = r["tor_port_load_ratio"]
    return float("inf") if v is None else v


@measure("clos_imbalance")
def clos_imbalance(ctx: Context, jobs: Jobs) -> Measured:
    """ToR-port load ratio toward a NIC on a plain Clos (hash polarization)."""
    single, dual = _ratio(_polarization(ctx, False)), _ratio(_polarization(ctx, True))
    return Measured(single, {"model": [["plain Clos", single], ["dual-plane", dual]]})


@measure("dual_plane_balance")
def dual_plane_balance(ctx: Context, jobs: Jobs) -> Measured:
    """ToR-port load ratio toward a NIC with dual-plane."""
    single, dual = _ratio(_polarization(ctx, False)), _ratio(_polarization(ctx, True))
    return Measured(dual, {"model": [["plain Clos", single], ["dual-plane", dual]]})


def _train(ctx: Context, job: dict[str, Any], label: str, dcn_pods: int = 1) -> Measured:
    job = {**job, "comm": {**job.get("comm", {}), "nccl": PAPER_NCCL}}
    per = {}
    for name, preset, routing in FABRICS:
        fabric: dict[str, Any] = {"preset": preset}
        if preset == "dcn-plus" and dcn_pods > 1:
            fabric["pods"] = dcn_pods  # a DCN+ pod holds 512 GPUs
        cfg = {"fabric": fabric, "train": {"routing": routing, "seed": 1}, "job": [job]}
        per[name] = ctx.run("train", cfg, f"{label} {preset}")["samples_per_s"]
    pts = [[n, round(v, 2)] for n, v in per.items()]
    return Measured(
        gain(per["HPN"], per["DCN+"]),
        {"model": pts},
        f"{per['DCN+']:.1f} -> {per['HPN']:.1f} samples/s",
    )


@measure("fig15")
def fig15(ctx: Context, jobs: Jobs) -> Measured:
    """A 2,304-GPU LLaMa-13B job (TP 8 x DP 288) on each fabric."""
    job = {**jobs["llama-13b"], "parallel": {"tp": 8, "pp": 1, "dp": 288, "micro_batch": 1}}
    job["parallel"]["global_batch"] = 2304
    return _train(ctx, job, "2,304 GPUs llama-13b", dcn_pods=5)


@measure("fig16_llama7b")
def fig16_llama7b(ctx: Context, jobs: Jobs) -> Measured:
    """LLaMa-7B, data parallel on 448 GPUs, on each fabric."""
    job = {**jobs["llama-7b"], "parallel": {"tp": 1, "pp": 1, "dp": 448, "micro_batch": 1}}
    job["parallel"]["global_batch"] = 1792
    return _train(ctx, job, "448 GPUs llama-7b")


@measure("fig16_llama13b")
def fig16_llama13b(ctx: Context, jobs: Jobs) -> Measured:
    """LLaMa-13B, TP 8 x DP 56 on 448 GPUs, on each fabric."""
    return _train(ctx, jobs["llama-13b"], "448 GPUs llama-13b")


@measure("fig16_gpt3")
def fig16_gpt3(ctx: Context, jobs: Jobs) -> Measured:
    """GPT-3 175B, TP 8 x PP 8 x DP 7 on 448 GPUs, on each fabric."""
    return _train(ctx, jobs["gpt3-175b"], "448 GPUs gpt3-175b")


def _busbw(ctx: Context, op: str, sizes: str) -> dict[str, list[list[float]]]:
    out: dict[str, list[list[float]]] = {}
    for name, preset, routing in FABRICS:
        cfg = {
            "fabric": {"preset": preset},
            "collective": {
                "op": op,
                "gpus": 448,
                "sizes": sizes,
                "routing": routing,
                "seed": 1,
                "nccl": PAPER_NCCL,
            },
        }
        res = ctx.run("collective", cfg, f"{op} 448 GPUs {preset}")["results"]
        out[name] = [[r["size_bytes"], round(r["busbw_GBps"], 3)] for r in res]
    return out


def _max_gain(series: dict[str, list[list[float]]]) -> tuple[float, float]:
    gains = [(gain(h[1], d[1]), h[0]) for h, d in zip(series["HPN"], series["DCN+"], strict=True)]
    return max(gains)


@measure("fig17a")
def fig17a(ctx: Context, jobs: Jobs) -> Measured:
    """AllReduce busbw per size on each fabric; the largest gain over the sizes."""
    s = _busbw(ctx, "allreduce", SIZES)
    g, at = _max_gain(s)
    return Measured(g, s, f"largest at {at / 2**20:g} MiB")


@measure("fig17a_hpn_4g")
def fig17a_hpn_4g(ctx: Context, jobs: Jobs) -> Measured:
    """HPN's AllReduce busbw at 4 GiB."""
    s = _busbw(ctx, "allreduce", SIZES)
    return Measured(s["HPN"][-1][1], {"HPN": s["HPN"]}, f"DCN+ {s['DCN+'][-1][1]:.1f} GB/s")


@measure("fig17b")
def fig17b(ctx: Context, jobs: Jobs) -> Measured:
    """AllGather busbw per size on each fabric; the gain at 4 GiB."""
    s = _busbw(ctx, "allgather", SIZES)
    return Measured(
        gain(s["HPN"][-1][1], s["DCN+"][-1][1]),
        s,
        f"{s['DCN+'][-1][1]:.1f} -> {s['HPN'][-1][1]:.1f} GB/s",
    )


@measure("fig17c")
def fig17c(ctx: Context, jobs: Jobs) -> Measured:
    """Multi-AllReduce busbw per size on each fabric; the largest gain."""
    s = _busbw(ctx, "multi-allreduce", "64M,256M,1G,4G")
    g, at = _max_gain(s)
    return Measured(g, s, f"largest at {at / 2**20:g} MiB")


def _fail(ctx: Context, jobs: Jobs, fault: str, dual_tor: bool) -> dict[str, Any]:
    job = {
        **jobs["llama-7b"],
        "name": "llama-7b-dp-bound",
        "model": {**jobs["llama-7b"]["model"], "seq_len": 2048},
        "parallel": {"tp": 1, "pp": 1, "dp": 256, "micro_batch": 1, "global_batch": 256},
        "overlap": {"dp": False},
    }
    fabric: dict[str, Any] = {"preset": "hpn", "segments": 1}
    if not dual_tor:
        fabric["dual_tor"] = False
    cfg = {"fabric": fabric, "job": job, "fail": {"faults": [fault], "routing": "hpn"}}
    design = "dual-ToR" if dual_tor else "single-ToR"
    return ctx.run("fail", cfg, f"{fault.split(':')[0]} {design}")


@measure("fig18_link_dual")
def fig18_link_dual(ctx: Context, jobs: Jobs) -> Measured:
    """Throughput lost while one NIC-ToR link is down, dual-ToR."""
    d = _fail(ctx, jobs, LINK, True)["throughput_loss"] * 100
    s = _fail(ctx, jobs, LINK, False)["throughput_loss"] * 100
    return Measured(round(d, 3), {"model": [["dual-ToR", d], ["single-ToR", s]]})


@measure("fig18_link_single")
def fig18_link_single(ctx: Context, jobs: Jobs) -> Measured:
    """Throughput lost while one NIC-ToR link is down, single-ToR."""
    d = _fail(ctx, jobs, LINK, True)["throughput_loss"] * 100
    r = _fail(ctx, jobs, LINK, False)
    s = r["throughput_loss"] * 100
    crash = ", crashed" if r["crashed"] else ""
    return Measured(
        round(s, 3),
        {"model": [["dual-ToR", d], ["single-ToR", s]]},
        f"halted {r['halted_s']:g} s{crash}",
    )


@measure("fig18_flap_single")
def fig18_flap_single(ctx: Context, jobs: Jobs) -> Measured:
    """Seconds halted by one 10 s flap, single-ToR."""
    r = _fail(ctx, jobs, FLAP, False)
    return Measured(
        r["halted_s"],
        {"model": [["single-ToR flap", r["halted_s"]]]},
        f"job time lost {r['job_time_lost_s']:.2f} s",
    )


@measure("fig18_flap_dual")
def fig18_flap_dual(ctx: Context, jobs: Jobs) -> Measured:
    """Seconds halted by one 10 s flap, dual-ToR."""
    r = _fail(ctx, jobs, FLAP, True)
    return Measured(
        r["halted_s"],
        {"model": [["dual-ToR flap", r["halted_s"]]]},
        f"job time lost {r['job_time_lost_s']:.2f} s",
    )


def _tab3(jobs: Jobs) -> dict[str, float]:
    """GPT-3 175B at TP 8 x PP 8 x DP 512 (P Tab 3): bytes per GPU of each traffic kind, from
    the plan `hpn train` builds (gradients per iteration, mean over the stages; one TP
    AllReduce of a micro-batch's activation; one PP send)."""
    from hpn.workload.training.config import JobConfig
    from hpn.workload.training.plan import plan_from_model

    job = {**jobs["gpt3-175b"], "parallel": {"tp": 8, "pp": 8, "dp": 512, "micro_batch": 1}}
    job["parallel"]["global_batch"] = 512 * 16
    plan = plan_from_model(JobConfig.model_validate(job))
    grads = [sum(st.buckets) for st in plan.stages]
    return {
        "DP": sum(grads) / len(grads),
        "DP_min": min(grads),
        "DP_max": max(grads),
        "TP": plan.stages[0].tp_fwd[0][1],
        "PP": plan.pp_bytes,
        "layers": plan.cfg.model.layers // plan.pp if plan.cfg.model else 0,
    }


@measure("tab3_dp")
def tab3_dp(ctx: Context, jobs: Jobs) -> Measured:
    """DP gradient AllReduce per GPU per iteration, GB."""
    v = _tab3(jobs)
    detail = f"per stage {v['DP_min'] / 1e9:.2f}-{v['DP_max'] / 1e9:.2f} GB (embedding, LM head)"
    return Measured(v["DP"] / 1e9, {"model": [["DP", round(v["DP"] / 1e9, 3)]]}, detail)


@measure("tab3_tp")
def tab3_tp(ctx: Context, jobs: Jobs) -> Measured:
    """TP AllReduce of one micro-batch's activation (b s h x 2 B), MB."""
    v = _tab3(jobs)
    per_stage = v["TP"] * v["layers"] / 1e6
    detail = (
        f"one AllReduce {v['TP'] / 1e6:.1f} MB; {v['layers']:.0f} layers x 1 = {per_stage:.0f} MB"
    )
    return Measured(v["TP"] / 1e6, {"model": [["TP", round(v["TP"] / 1e6, 2)]]}, detail)


@measure("tab3_pp")
def tab3_pp(ctx: Context, jobs: Jobs) -> Measured:
    """PP activation send per GPU, MB."""
    v = _tab3(jobs)
    return Measured(v["PP"] / 1e6, {"model": [["PP", round(v["PP"] / 1e6, 3)]]}, "")


@measure("path_selection")
def path_selection(ctx: Context, jobs: Jobs) -> Measured:
    """Four data-parallel jobs of 128 GPUs side by side on HPN (16 hosts each, LLaMa-7B shape,
    TP 8 x DP 16), ECMP vs the precise path selection: the largest per-job gain."""
    model = {"layers": 32, "hidden": 4096, "heads": 32, "seq_len": 2048, "vocab": 32000}
    four = [
        {
            "name": name,
            "placement": {"first_host": 16 * k},
            "model": model,
            "parallel": {"tp": 8, "pp": 1, "dp": 16, "global_batch": 64},
            "comm": {"grad_reduce": "bf16"},  # 16 bit, as the paper's jobs ([jobs] in claims)
        }
        for k, name in enumerate("abcd")
    ]
    per: dict[str, dict[str, float]] = {}
    for routing in ("ecmp", "hpn"):
        cfg = {"fabric": {"preset": "hpn"}, "train": {"routing": routing, "seed": 1}, "job": four}
        res = ctx.run("train", cfg, f"4 jobs x 128 GPUs routing {routing}")
        per[routing] = {j["name"]: j["samples_per_s"] for j in res["jobs"]}
    gains = {n: gain(per["hpn"][n], per["ecmp"][n]) for n in per["hpn"]}
    top = max(gains, key=lambda n: gains[n])
    pts = [[f"job {n}", round(g, 2)] for n, g in gains.items()]
    detail = ", ".join(f"{n}: {per['ecmp'][n]:.1f} -> {per['hpn'][n]:.1f}" for n in gains)
    return Measured(gains[top], {"model": pts}, f"samples/s per job, ECMP -> HPN: {detail}")


FIG19_HOSTS = (4, 8, 16, 32)  # P App A, Fig 19: 8-GPU hosts, half in each of 2 segments
PLANES = (("single-plane", False), ("dual-plane", True))


def boundary_job(
    ctx: Context, op: str, hosts: int, dual: bool, sizes: str, label: str
) -> list[dict[str, Any]]:
    """``op`` at ``sizes`` on ``hosts`` full hosts across the boundary of a 2-segment HPN Pod
    (half at the end of segment 0, half at the start of segment 1; the fabric's routing):
    its rows, one per size."""
    fabric = {"preset": "hpn", "segments": 2, "dual_plane": dual}
    boundary = _per_segment(_summary(ctx, "hpn 2 segments", segments=2)) // 8  # 8 GPUs a host
    cfg = {
        "fabric": fabric,
        "collective": {
            "op": op,
            "gpus": hosts * 8,
            "sizes": sizes,
            "first_host": boundary - hosts // 2,
            "seed": 1,
            "nccl": PAPER_NCCL,
        },
    }
    plane = "dual" if dual else "single"
    return ctx.run("collective", cfg, f"{label} {op} {hosts} hosts {plane}-plane")["results"]


def _fig19_run(ctx: Context, op: str, hosts: int, dual: bool) -> dict[str, Any]:
    """One 4 GiB ``op`` of ``hosts`` full hosts across the boundary of a 2-segment HPN Pod."""
    return boundary_job(ctx, op, hosts, dual, "4G", "fig19")[0]


def _fig19(ctx: Context) -> dict[str, list[list[float]]]:
    """algbw (GB/s) of the 4 GiB AllReduce per host count, for each plane design."""
    return {
        name: [
            [h, round(_fig19_run(ctx, "allreduce", h, dual)["algbw_GBps"], 2)] for h in FIG19_HOSTS
        ]
        for name, dual in PLANES
    }


@measure("fig19_gain")
def fig19_gain(ctx: Context, jobs: Jobs) -> Measured:
    """Dual-plane over single-plane, 4 GiB AllReduce across 2 segments: the smallest algbw gain
    over 4-32 hosts; the detail adds a network-bound Multi-AllReduce on the same hosts."""
    s = _fig19(ctx)
    gains = [gain(d[1], o[1]) for o, d in zip(s["single-plane"], s["dual-plane"], strict=True)]
    multi = {
        name: [_fig19_run(ctx, "multi-allreduce", h, dual)["busbw_GBps"] for h in FIG19_HOSTS]
        for name, dual in PLANES
    }
    one, two = multi["single-plane"], multi["dual-plane"]
    ratios = [b / a for a, b in zip(one, two, strict=True)]
    detail = (
        "AllReduce algbw gain per host count: "
        + ", ".join(f"{h}: {g:+.1f} %" for h, g in zip(FIG19_HOSTS, gains, strict=True))
        + f"; Multi-AllReduce busbw single {min(one):.1f}-{max(one):.1f} vs dual "
        f"{min(two):.1f}-{max(two):.1f} GB/s ({min(ratios):.2f}-{max(ratios):.2f}x)"
    )
    return Measured(min(gains), s, detail)


@measure("fig19_dual_algbw")
def fig19_dual_algbw(ctx: Context, jobs: Jobs) -> Measured:
    """Dual-plane algbw of the 4 GiB AllReduce on 32 hosts (256 GPUs) across 2 segments."""
    s = _fig19(ctx)
    r = _fig19_run(ctx, "allreduce", FIG19_HOSTS[-1], True)
    ran = f"{r['algo']}/{r['proto']}/{r['channels']}ch"
    return Measured(s["dual-plane"][-1][1], s, f"busbw {r['busbw_GBps']:.1f} GB/s, ran {ran}")
