"""One expert-parallel decode step on its busiest GPU: reads, math and the all-to-all.

Experts are spread over GPUS GPUs (SLOTS per GPU with REDUNDANT copies of hot experts),
attention is data-parallel, and two micro-batches hide the all-to-all behind the math, so the
step takes the longest of the three (roofline.epdeploy). IMBALANCE is the busiest GPU's routed
tokens over the mean: 1 is uniform routing; TensorRT-LLM measured 2.564 without its load
balancer and 1.109 with it. Change them and press Run.
"""

from roofline import Hardware, Workload, builtin_specs
from roofline.epdeploy import ExpertLayout, expert_step

MODEL = "deepseek-v3"
PRECISION = "fp8"
GPU = "h100-sxm"
USERS_PER_GPU = 128
CONTEXT = 4096
REDUNDANT = 0
IMBALANCE = 1.0

specs = builtin_specs()
model, gpu = specs.model(MODEL), specs.gpu(GPU)
print(f"{model.name} ({PRECISION}) on {gpu.name}s, {USERS_PER_GPU} users a GPU at {CONTEXT:,} tokens")
print(f"{'GPUs':>5} {'slots':>6} {'reads':>9} {'math':>9} {'all-to-all':>11} {'step':>9}", end=" ")
print(f"{'bound':>14} {'tok/s/GPU':>10} fits")
for gpus in (8, 16, 32, 64):
    work = Workload(model, PRECISION, "bf16", USERS_PER_GPU * gpus, CONTEXT)
    step = expert_step(Hardware(gpu), work, ExpertLayout(gpus, imbalance=IMBALANCE, redundant=REDUNDANT))
    print(
        f"{gpus:>5} {step.slots_per_gpu:>6.0f} {step.memory_s * 1e3:>6.2f} ms {step.compute_s * 1e3:>6.2f} ms"
        f" {step.alltoall_s * 1e3:>8.2f} ms {step.step_s * 1e3:>6.2f} ms {step.bound:>14}"
        f" {step.batch / step.step_s / gpus:>10,.0f} {'yes' if step.fits else 'no'}"
    )
