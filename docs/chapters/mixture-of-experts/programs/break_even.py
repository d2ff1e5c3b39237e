"""Expert parallelism against tensor parallelism on the same GPUs: the batch where EP pays.

At one user TP reads a slice of everything while every EP GPU reads its own copy of attention
and the head; as the batch grows, TP's all-reduces and its copy of every user's latent cache on
every GPU catch up (roofline.moelayout). Change the GPUs, the context or the model and press Run.
"""

from roofline import Hardware, Workload, builtin_specs
from roofline.moelayout import ep_break_even_batch, ep_layout, tp_layout

MODEL = "deepseek-v3"
PRECISION = "fp8"
GPU = "h200"
GPUS = 8
CONTEXT = 4096

specs = builtin_specs()
model, hardware = specs.model(MODEL), Hardware(specs.gpu(GPU))
print(f"{model.name} ({PRECISION}) on {GPUS} x {hardware.gpu.name}, {CONTEXT:,} tokens of context")
print(f"{'users':>6} {'TP tok/s':>10} {'EP tok/s':>10} {'TP fits':>8} {'EP fits':>8}")
for users in (1, 8, 32, 64, 256, 1024):
    work = Workload(model, PRECISION, "bf16", users, CONTEXT)
    tp, ep = tp_layout(hardware, work, GPUS), ep_layout(hardware, work, GPUS)
    print(f"{users:>6} {tp.tokens_per_s:>10,.0f} {ep.tokens_per_s:>10,.0f} {tp.fits!s:>8} {ep.fits!s:>8}")
even = ep_break_even_batch(hardware, Workload(model, PRECISION, "bf16", 1, CONTEXT), GPUS)
print(f"EP{GPUS} reaches TP{GPUS} from {even:,} users" if even else "EP never reaches TP here")
