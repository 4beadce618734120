"""GPU presets: dense BF16/FP16 tensor-core peak TFLOPS (vendor datasheets, no sparsity)."""

from __future__ import annotations

GPU_PEAK_TFLOPS: dict[str, float] = {
    "H800": 989.0,  # SXM; the paper's evaluation hosts (8 x H800)
    "H100": 989.0,  # SXM
    "H20": 148.0,
    "A100": 312.0,
}
