"""Every weight format on one GPU: the math it runs there, its bits per weight, decode tokens/s
per user at batch 1 and at BATCH users, the prefill of PROMPT tokens, the users that fit at
CONTEXT tokens, and its critical batch F * b_w / (2 W). All are ceilings.
Try GPU = "a100-80gb" or "b200", or MODEL = "llama-3.1-70b", then Run.
"""

from roofline import Hardware, Workload, builtin_specs
from roofline.quantization import compare_formats

GPU = "h100-sxm"
MODEL = "llama-3.1-8b"
FORMATS = ["bf16", "fp8", "int8-sq", "int4-awq", "nvfp4"]
BATCH = 64
CONTEXT = 4096
PROMPT = 2000

specs = builtin_specs()
hardware = Hardware(specs.gpu(GPU))
model = specs.model(MODEL)
at_one = compare_formats(hardware, Workload(model, context=CONTEXT, prompt=PROMPT), FORMATS)
at_batch = compare_formats(hardware, Workload(model, batch=BATCH, context=CONTEXT), FORMATS)
print(f"{model.name} on one {hardware.gpu.name}, {CONTEXT:,} tokens of context (ceilings)\n")
print(f"{'format':<10}{'math':>6}{'bits':>7}{'tok/s b=1':>11}{f'b={BATCH}':>9}{'prefill':>11}{'users':>7}{'B*':>6}")
for one, many in zip(at_one, at_batch, strict=True):
    users = "any" if one.users_that_fit is None else f"{one.users_that_fit:,}"
    print(
        f"{one.weight_precision:<10}{one.math.precision:>6}{one.bits_per_weight:>7.4g}"
        f"{one.decode_tokens_per_s_per_user:>11,.0f}{many.decode_tokens_per_s_per_user:>9,.0f}"
        f"{one.prefill_s * 1e3:>8,.1f} ms{users:>7}{one.critical_batch:>6,.0f}"
    )
print()
for one in at_one:
    print(f"{one.weight_precision}: {one.math.line}")
