"""Fabric specs: validated, versionable descriptions of a fabric (one model per preset).

Defaults are the paper's (Qian et al., SIGCOMM 2024); every field can be set in a TOML
``[fabric]`` table or with ``--set field=value`` on the command line. Sizes are in human units.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from hpn.config import Bandwidth, Duration, Model

CHIPS = {25.6e12: "25.6T", 51.2e12: "51.2T", 102.4e12: "102.4T"}
"""Single-chip switch generations a fabric can be built from (the port budgets follow)."""
PORT_MAX = max(CHIPS)
"""A NIC, NVLink or link speed at most, bit/s: no port is faster than the largest chip."""
LATENCY_MAX = 1.0
"""A link's latency at most, s (a datacenter link's is below 10 us)."""


class HostFields(Model):
    """A GPU host: GPUs on NVLink/NVSwitch, one backend NIC per GPU."""

    gpus_per_host: int = Field(8, ge=1, le=64, description="GPUs (and backend NICs) per host")
    nic_bandwidth: Bandwidth = Field(
        "400G",
        le=PORT_MAX,
        description="backend NIC bandwidth per GPU (2 x 200G ports under dual-ToR; <= 102.4T)",
    )
    nvlink_bandwidth: Bandwidth = Field(
        "400GB/s",
        le=PORT_MAX,
        description="NVLink bandwidth per GPU, bidirectional (H800: 400 GB/s; <= 102.4T)",
    )
    nvlink_latency: Duration = Field(
        "25ns", le=LATENCY_MAX, description="GPU <-> NVSwitch latency (<= 1s)"
    )
    link_latency: Duration = Field(
        "500ns", le=LATENCY_MAX, description="latency of every network link (<= 1s)"
    )
    chip: Bandwidth = Field(
        "51.2T", description="switch chip capacity (single-chip switches): 25.6T, 51.2T or 102.4T"
    )
    uplink_speed: Bandwidth = Field(
        "400G", le=PORT_MAX, description="port speed above the ToR downlinks (<= 102.4T)"
    )
    frontend: bool = Field(False, description="also build the frontend network (NIC0 per host)")
    frontend_nic_bandwidth: Bandwidth = Field(
        "400G", le=PORT_MAX, description="frontend NIC (2 x 200G; <= 102.4T)"
    )

    @field_validator("nic_bandwidth", "nvlink_bandwidth", "chip", "uplink_speed")
    @classmethod
    def _positive(cls, value: float) -> float:
        if value <= 0:
            raise ValueError("must be > 0")
        return value

    @field_validator("chip")
    @classmethod
    def _generation(cls, value: float) -> float:
        if not any(abs(value - c) <= 1e-9 * c for c in CHIPS):
            raise ValueError(f"must be one of {', '.join(CHIPS.values())}")
        return value


class HpnSpec(HostFields):
    """HPN: dual-ToR, rail-optimized segments, dual-plane tier 2, 15:1 core tier."""

    preset: Literal["hpn"] = "hpn"
    pods: int = Field(1, ge=1, le=1024, description="pods (a core tier joins them when > 1)")
    segments: int | None = Field(
        None, ge=1, le=4096, description="segments per pod (default: as many as the Aggs take)"
    )
    dual_tor: bool = Field(True, description="each NIC's two ports on two ToRs (non-stacked)")
    dual_plane: bool = Field(True, description="port-p ToRs link only to plane-p Aggs")
    rail_optimized: bool = Field(True, description="NIC r of every host on ToR pair r")
    rail_only: bool = Field(False, description="tier 2 split per rail (paper's Table 4)")
    tor_active_ports: int | None = Field(
        None, ge=1, description="active ToR downlinks (default: half the chip at the port speed)"
    )
    tor_backup_ports: int = Field(8, ge=0, description="backup-host ToR downlinks")
    tor_uplinks: int | None = Field(
        None, ge=0, description="ToR uplinks (default: what the chip has left)"
    )
    agg_oversubscription: float = Field(
        15.0, gt=0, le=1024, description="Agg downlinks : uplinks (15 -> 120/8 on 128 ports)"
    )
    aggs_per_core_group: int | None = Field(
        None, ge=1, description="Aggs that share one group of cores (default: a quarter of a plane)"
    )


class RailOnlySpec(HpnSpec):
    """The rail-only alternative of the paper's Table 4: tier 2 per rail and plane."""

    preset: Literal["rail-only"] = "rail-only"  # type: ignore[assignment]
    rail_only: bool = True


class DcnPlusSpec(HostFields):
    """DCN+, the previous generation (App C): 3-tier Clos, dual-ToR, not rail-optimized."""

    preset: Literal["dcn-plus"] = "dcn-plus"
    pods: int = Field(1, ge=1, le=1024, description="pods (a core tier joins them when > 1)")
    segments: int | None = Field(
        None, ge=1, le=4096, description="segments (ToR pairs) per pod (default: the most)"
    )
    tor_uplinks: int | None = Field(None, ge=1, description="ToR uplinks (default: 1:1)")
    aggs_per_pod: int = Field(8, ge=1, description="Aggs per pod")
    agg_oversubscription: float = Field(1.0, gt=0, le=1024, description="Agg down : up")
    core_parallel_links: int = Field(4, ge=1, description="parallel links per Agg-Core pair")


class FatTreeSpec(Model):
    """A k-ary fat tree (Al-Fares et al.): k pods, k^3/4 hosts, full bisection."""

    preset: Literal["fat-tree"] = "fat-tree"
    k: int = Field(8, ge=2, le=256, description="switch radix (even)")
    speed: Bandwidth = Field("100G", le=PORT_MAX, description="speed of every link (<= 102.4T)")
    link_latency: Duration = Field(
        "500ns", le=LATENCY_MAX, description="latency of every link (<= 1s)"
    )

    @field_validator("k")
    @classmethod
    def _even(cls, k: int) -> int:
        if k % 2:
            raise ValueError("must be even")
        return k

    @field_validator("speed")
    @classmethod
    def _positive(cls, speed: float) -> float:
        if speed <= 0:
            raise ValueError("must be > 0")
        return speed
