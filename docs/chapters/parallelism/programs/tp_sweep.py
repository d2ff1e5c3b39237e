"""Sweep the tensor-parallel degrees of one model on one GPU type: what each token pays.

ALLREDUCE_LATENCY_S: None charges the GPU's smallest measured all-reduce latency (the
ceiling's); 19.19e-6 is NCCL's on eight H100s. Set GROWS = True to make it grow as a ring
of 2(G - 1) hops, scaled so that eight GPUs pay ALLREDUCE_LATENCY_S. Change the model,
the GPU or the batch and press Run.
"""

from roofline import Hardware, Workload, builtin_specs, decode_step
from roofline.deployment import best_tp_degree
from roofline.parallelism import usable_tp_degrees

MODEL = "llama-3.1-8b"
GPU = "h100-sxm"
BATCH = 1
CONTEXT = 1024
ALLREDUCE_LATENCY_S = 19.19e-6
GROWS = True

specs = builtin_specs()
model, gpu = specs.model(MODEL), specs.gpu(GPU)
work = Workload(model, batch=BATCH, context=CONTEXT)
print(f"{model.name} on {gpu.name}s, {BATCH} user(s) at {CONTEXT:,} tokens")
print(f"{'GPUs':>4} {'latency':>9} {'reads':>9} {'all-reduces':>12} {'step':>9} {'tok/s/user':>11}")
steps = {}
for g in usable_tp_degrees(model, limit=8):
    latency = ALLREDUCE_LATENCY_S
    if GROWS and latency is not None:
        latency = latency * (g - 1) / 7
    step = decode_step(Hardware(gpu, g, allreduce_latency_s=latency), work)
    steps[g] = step.seconds
    shown = "-" if g == 1 else f"{(latency or Hardware(gpu, g).allreduce_latency) * 1e6:.1f} us"
    reads = max(step.memory_s, step.compute_s)
    print(
        f"{g:>4} {shown:>9} {reads * 1e3:>6.3f} ms {step.communication_s * 1e3:>9.3f} ms"
        f" {step.seconds * 1e3:>6.3f} ms {1 / step.seconds:>11,.0f}"
    )
fastest = min(steps, key=steps.get)
print(
    f"fastest here: {fastest} GPUs; the package's best_tp_degree at the ceiling's latency:",
    best_tp_degree(Hardware(gpu, 8), work),
)
