"""Three schedulers, one stream of requests: static batches, continuous batching, chunked prefill.

Llama 3.1 8B on one H100 serves 1,000 requests arriving at random, 16 per
second, with prompts of 128 to 4,096 tokens and outputs of 32 to 512, at most
64 running at once (vLLM's max_num_seqs). Each column is one scheduler on the
same arrivals (same seed). ITL is every gap between two tokens; TPOT is each
request's mean gap. Try rate = 32, prompt = "4096:8192" or max_batch = 256,
then Run.
"""

from roofline import Hardware, ServingConfig, Workload, builtin_specs, parse_lengths, simulate

gpu = "h100-sxm"
model = "llama-3.1-8b"
rate = 16  # requests per second
prompt = "128:4096"  # tokens, N or LO:HI
output = "32:512"
max_batch = 64  # most requests running at once (max_num_seqs)
token_budget = 512  # chunked prefill: most tokens in one iteration (max_num_batched_tokens)

specs = builtin_specs()
hardware, workload = Hardware(specs.gpu(gpu)), Workload(specs.model(model))
results = {}
for policy in ("static", "continuous", "chunked"):
    config = ServingConfig(
        policy=policy,
        rate=rate,
        requests=1000,
        prompt=parse_lengths(prompt, "prompt"),
        output=parse_lengths(output, "output"),
        max_batch=max_batch,
        token_budget=token_budget,
    )
    results[policy] = simulate(hardware, workload, config)


def duration(seconds):
    """Milliseconds under a second, seconds from one on."""
    if seconds is None:
        return "—"
    return f"{seconds * 1e3:,.1f} ms" if seconds < 1 else f"{seconds:,.2f} s"


rows = [
    ("TTFT p50", lambda r: duration(r.ttft_s[50])),
    ("TTFT p99", lambda r: duration(r.ttft_s[99])),
    ("ITL p50", lambda r: duration(r.itl_s[50])),
    ("ITL p99", lambda r: duration(r.itl_s[99])),
    ("TPOT p99", lambda r: duration(r.tpot_s[99])),
    ("output tokens/s", lambda r: f"{r.throughput_tokens_per_s:,.0f}"),
    ("goodput, requests/s", lambda r: f"{r.goodput_requests_per_s:,.1f}"),
    ("mean in flight", lambda r: f"{r.mean_in_flight:,.1f}"),
    ("GPU busy", lambda r: f"{r.busy_fraction:.0%}"),
]
print(f"{'':<20}" + "".join(f"{policy:>14}" for policy in results))
for label, cell in rows:
    print(f"{label:<20}" + "".join(f"{cell(result):>14}" for result in results.values()))
print(f"\nGoodput counts requests with TTFT <= {config.ttft_slo_s:g} s and TPOT <= {config.tpot_slo_s * 1e3:g} ms.")
