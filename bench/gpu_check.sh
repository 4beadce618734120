#!/usr/bin/env bash
# The engine's whole check on a CUDA machine: tests, benchmarks, simulator vs engine.
# Usage (from the repository root, with the engine extra installed): bash bench/gpu_check.sh
set -euo pipefail
python -c "import torch; assert torch.cuda.is_available(), 'no CUDA device'; print(torch.cuda.get_device_name(0))"
export HPN_SERVE_DEVICE=cuda
python -m pytest tests/serve -x -q
python bench/bench_serve.py --device cuda --size 200m
# the instances share the one GPU: the profile's contention probe measures that
python bench/serve_vs_sim.py --device cuda --sizes 50m,200m --count 12 --memory 4000000000 \
    --duration 120 --profile-each --timeline "${OUT:-.}/timeline" \
    --out "${OUT:-.}/serve_vs_sim_cuda.json"
