"""How fast can an H100 run each model? Ceilings at 16, 8 and 4-bit weights.

Decode tokens/s is for one user; prefill is one 2,000-token prompt. A model
too big for one GPU gets as many as it needs. The chapter's table comes from
the same two functions, so the numbers agree. Try gpu = "b200", then Run.
"""

from roofline import builtin_specs, estimate
from roofline.sweep import decode_prefill_rows, decode_prefill_table

gpu = "h100-sxm"
precisions = ("bf16", "fp8", "int4")
prompt = 2000

specs = builtin_specs()
rows = decode_prefill_rows(specs, gpu, precisions=precisions, prompt=prompt)
print(decode_prefill_table(rows).text(), end="")

# Batching: a decode step reads the weights once for the whole batch, so it
# stays memory-bound until the math for every user takes as long as the read.
crossover = estimate(gpu, "llama-3.1-8b").simple_crossover_batch
print(f"\nAt 16-bit, decode turns compute-bound near {crossover:,.0f} users.")
