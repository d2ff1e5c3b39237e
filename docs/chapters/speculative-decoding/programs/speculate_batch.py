"""Speculative decoding on one H100: the speedup at each batch, and where it stops paying.

Each row is one draft length γ; each column a batch of users decoding together.
Change the acceptance rate, the drafter or the context and press Run again:
try alpha = 0.6, context = 4096, or draft_cost = 0.0 (a free draft).
"""

from roofline import Hardware, Workload, builtin_specs
from roofline.speculative import break_even_batch, speculation_round, tokens_per_step

alpha = 0.8  # acceptance rate of one draft token
context = 0  # tokens cached per user
draft_cost = None  # None: Llama 3.2 1B's own step; or a number, the draft's step ÷ the target's

specs = builtin_specs()
hardware = Hardware(specs.gpu("h100-sxm"))
target = Workload(specs.model("llama-3.1-8b"), context=context)
draft = specs.model("llama-3.2-1b")
drafter = {"draft_cost": draft_cost} if draft_cost is not None else {"draft": draft}

name = draft.name if draft_cost is None else f"a draft costing {draft_cost:g} of a step"
print(f"{target.model.name} on one {hardware.gpu.name}, {name}, α = {alpha}, context {context:,}")
batches = (1, 16, 64, 128, 256)
print(f"{'γ':<3}{'τ':>4} " + "".join(f"{'B=' + str(b):>8}" for b in batches) + "   break-even")
for gamma in (1, 2, 4, 8):
    speedups = [speculation_round(hardware, target, gamma, b, **drafter).speedup(alpha) for b in batches]
    even = break_even_batch(hardware, target, alpha, gamma, **drafter)
    print(
        f"{gamma:<3}{tokens_per_step(alpha, gamma):>4.2f} "
        + "".join(f"{s:>7.2f}×" for s in speedups)
        + f"   {'never' if even is None else f'{even:,.0f} users'}"
    )
