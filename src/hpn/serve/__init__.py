"""A real multi-model serving engine behind the pool's policies (named apart from
`hpn.engine`, the flow simulator).

- `store`: Hugging Face causal-LM checkpoints in a local folder; `make_models` writes seeded,
  randomly initialised Llama- and Qwen2-style checkpoints with a small byte-level BPE
  tokenizer (nothing is downloaded).
- `device`: an instance's device, memory budget, thread count and host link (throttled).
- `weights`: weights in host memory (pinned on CUDA), copied into an instance's device pool
  (scale up), evicted (scale down), pre-loaded behind the running model.
- `kv`: paged-KV accounting: a block pool per instance, a block table per request.
- `sampling`: sampling parameters and the sampler (penalties, top-p/k, logprobs).
- `runner`: batched prefill and decode steps with transformers' own model classes.
- `decoding`: an instance's decode loop: aborts, block slots, preemption, re-admission.
- `backend`: `EngineBackend`, the pool `Backend` contract on a wall clock with one worker
  thread per instance.
- `api`, `server`, `metrics`: the OpenAI-compatible HTTP server and vLLM's metrics.

torch, transformers, safetensors and tokenizers come with the `engine` extra; importing
this package does not import them.
"""
