"""How much of a mixture of experts one decode step reads, and when its experts turn compute-bound.

Each routed expert is picked by a token with probability E_tok/E under uniform routing, so B
tokens touch E (1 - (1 - E_tok/E)^B) of them on average (roofline.moe). Change the model, its
weight format, the GPU or the batches and press Run.
"""

from roofline import Hardware, builtin_specs, moe
from roofline import architecture as arch
from roofline.quantization import critical_batch_for

MODEL = "deepseek-v3"
PRECISION = "fp8"
GPU = "h100-sxm"
BATCHES = (1, 4, 16, 64, 256, 1024)

specs = builtin_specs()
model = specs.model(MODEL)
spec = model.moe
held = arch.weight_bytes(model, PRECISION)
print(f"{model.name}: {spec.experts} routed experts, {spec.experts_per_token} a token, {spec.shared_experts} shared")
print(f"weights held: {held / 1e9:,.1f} GB ({PRECISION})")
print(f"{'users':>6} {'experts touched':>16} {'read a step':>12} {'share':>6} {'tokens/expert':>14}")
for batch in BATCHES:
    touched = moe.routed_experts_touched(spec.experts, spec.experts_per_token, batch)
    read = arch.weights_read_bytes(model, batch, PRECISION)
    per_expert = moe.tokens_per_expert(batch, spec.experts_per_token, spec.experts)
    print(f"{batch:>6} {touched:>16.1f} {read / 1e9:>9.1f} GB {read / held:>6.0%} {per_expert:>14.2f}")
dense = critical_batch_for(Hardware(specs.gpu(GPU)), PRECISION)
expert = moe.expert_critical_batch(dense, spec.experts, spec.experts_per_token)
print(f"on {specs.gpu(GPU).name}: a dense matmul turns compute-bound at {dense:,.0f} tokens,")
print(f"the mean expert at {expert:,.0f} users ({spec.experts / spec.experts_per_token:g} times as many)")
