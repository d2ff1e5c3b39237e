"""What each model's KV cache costs, and how many users fit beside its weights.

For every model in the specs: the cache per token at 16 bits, one user's cache
at CONTEXT tokens, and the users that fit on the fewest H100s that hold the
16-bit weights and one such user. Try CONTEXT = 131072, or KV = "fp8", then Run.
"""

from roofline import Hardware, Workload, attention_cache, builtin_specs, users_that_fit
from roofline.performance import gpus_to_fit

CONTEXT = 8192
GPU = "h100-sxm"
KV = "bf16"

specs = builtin_specs()
gpu = specs.gpu(GPU)
print(f"{CONTEXT:,} tokens per user, {KV} cache, on {gpu.name}s\n")
print(f"{'model':<18}{'attention':>10}{'KV/token':>11}{'per user':>11}{'GPUs':>6}{'users':>7}")
for model in specs.models.values():
    cache = attention_cache(model, KV)
    workload = Workload(model, kv_precision=KV, context=CONTEXT)
    hardware = Hardware(gpu, gpus_to_fit(Hardware(gpu), workload))
    users = users_that_fit(hardware, workload)  # None: an empty context sets no limit
    print(
        f"{model.name:<18}{cache.kind:>10}{cache.bytes_per_token / 1e3:>8,.1f} kB"
        f"{workload.kv_bytes_per_user / 1e9:>8,.2f} GB{hardware.count:>6}{'any' if users is None else f'{users:,}':>7}"
    )
