"""How fast can an H100 run each model? The rule of thumb, then the ceilings.

Decode tokens/s is for one user; prefill is one 2,000-token prompt. A model
too big for one GPU gets as many as it needs (a tensor-parallel degree, paying
its all-reduces). Mixtures of experts and latent attention get their own table.
The chapter's tables come from the same two functions, so the numbers agree.
Try gpu = "b200", then Run.
"""

from roofline import builtin_specs, estimate
from roofline.sweep import decode_prefill_rows, decode_prefill_table

gpu = "h100-sxm"
precisions = ("bf16", "fp8", "int4")
prompt = 2000

specs = builtin_specs()
dense = [m.id for m in specs.models.values() if m.moe is None and m.mla is None]
sparse = [m.id for m in specs.models.values() if m.id not in dense]
for models in (dense, sparse):
    rows = decode_prefill_rows(specs, gpu, models, precisions=precisions, prompt=prompt)
    print(decode_prefill_table(rows).text())

# The rule of thumb (every weight byte per step; 2·N·P FLOPs at the 16-bit
# peak) beside the ceiling, and what makes them differ.
small = estimate(gpu, "llama-3.1-8b", prompt=prompt)
print("Llama 3.1 8B at bf16, the rule and the ceiling:")
print(f"- decode: {small.decode_vs_rule} tokens/s")
print(f"- prefill: {small.prefill_vs_rule}")

# Batching: a decode step reads the weights once for the whole batch, so it
# stays memory-bound until the math for every user takes as long as the read.
crossover = small.simple_crossover_batch
print(f"\nAt 16-bit, decode turns compute-bound near {crossover:,.0f} users.")
