from roofline import Hardware, Workload, builtin_specs
from roofline.disagg import kv_transfer
from roofline.prefixcache import cached_tokens, hit_saving

specs = builtin_specs()
h100 = specs.gpu("h100-sxm")

# What a cached prefix saves: a 4,096-token prompt of Llama 3.1 8B on one H100.
small = Workload(specs.model("llama-3.1-8b"))
for share in (0.0, 0.5, 0.9, 0.99):
    hit = hit_saving(Hardware(h100), small, 4096, cached_tokens(4096, share))
    print(f"{share:4.0%} cached: first token after {hit.after_s * 1e3:6.1f} ms, {hit.saved_fraction:5.1%} saved")

# What a split pays: Llama 3.1 70B's KV cache, from a prefill pool of 4 H100s.
big = Workload(specs.model("llama-3.1-70b"))
for link in ("nvlink", "network"):
    moved = kv_transfer(Hardware(h100, 4), big, 4096, link)
    gigabytes, ms, prefill_ms = moved.bytes / 1e9, moved.seconds * 1e3, moved.prefill_s * 1e3
    print(f"{link:8} {gigabytes:.2f} GB in {ms:.2f} ms, beside a prefill of {prefill_ms:.1f} ms")
