"""Sweep the tensor-parallel degrees of one model on one GPU type: what each token pays.

PRESET names one of the GPU's measured all-reduce latencies ("nccl", "vllm_custom",
"custom_oneshot"): its measurement at the count, else its fit (NCCL's ring: a base plus
2(G - 1) steps); None charges the smallest measured at each count (the ceiling's).
FIXED_S, if set, charges that many seconds whatever the count instead. Change the model,
the GPU or the batch and press Run.
"""

from roofline import Hardware, Workload, builtin_specs, decode_step
from roofline.deployment import best_tp_degree
from roofline.parallelism import usable_tp_degrees

MODEL = "llama-3.1-8b"
GPU = "h100-sxm"
BATCH = 1
CONTEXT = 1024
PRESET = "nccl"
FIXED_S = None

specs = builtin_specs()
model, gpu = specs.model(MODEL), specs.gpu(GPU)
work = Workload(model, batch=BATCH, context=CONTEXT)
print(f"{model.name} on {gpu.name}s, {BATCH} user(s) at {CONTEXT:,} tokens")
print(f"{'GPUs':>4} {'latency':>9} {'reads':>9} {'all-reduces':>12} {'step':>9} {'tok/s/user':>11}")
steps = {}
for g in usable_tp_degrees(model, limit=8):
    hardware = Hardware(gpu, g, allreduce_latency_s=FIXED_S, allreduce_preset=PRESET if FIXED_S is None else None)
    step = decode_step(hardware, work)
    steps[g] = step.seconds
    shown = "-" if g == 1 else f"{hardware.allreduce_latency * 1e6:.1f} us"
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
