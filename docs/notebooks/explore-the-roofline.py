# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Explore the roofline
#
# This notebook runs the same `roofline` package as the chapters, when the site
# is built. This page shows what it printed then: unlike the chapters' Run cells,
# it does not run in your browser. <a href="explore-the-roofline.py" download>Download it</a>
# (a Jupytext notebook: a plain `.py` file), change the GPU, the model or the load,
# and run it again on your machine: install the `roofline` package (standard library only) and
# Jupyter with Jupytext, which opens the `.py` file as a notebook:
#
# ```sh
# git clone <this repository> roofline && cd roofline
# python3 -m venv .venv && . .venv/bin/activate
# pip install .
# pip install jupyterlab jupytext altair vl-convert-python
# jupyter lab docs/notebooks/explore-the-roofline.py
# ```
#
# Without Jupyter, `python docs/notebooks/explore-the-roofline.py` prints the same
# numbers (the charts need a notebook to show).
#
# Charts use Altair's `svg` renderer: vl-convert draws them in the kernel, so
# the page needs no JavaScript from anywhere to show them.

# %%
import altair as alt

import roofline
from roofline import formatting as fmt
from roofline.memorykinds import BUDGET, labelled

alt.renderers.enable("svg")
specs = roofline.load_specs()
print("GPUs:  ", ", ".join(specs.gpus))
print("models:", ", ".join(specs.models))

# %% [markdown]
# ## One deployment
#
# `roofline.estimate` answers everything about one deployment. Here: Llama 3.1
# 8B in 16 bits on one H100, 32 users with 2,000 tokens of context each.

# %%
GPU, MODEL = "h100-sxm", "llama-3.1-8b"
result = roofline.estimate(GPU, MODEL, batch=32, context=2000, prompt=2000)
print(f"decode, per user:  {fmt.rate(result.decode_tokens_per_s_per_user)} tokens/s")
print(f"decode, all users: {fmt.rate(result.decode_tokens_per_s_total)} tokens/s ({result.decode.bound}-bound)")
print(f"prefill:           {fmt.milliseconds(result.prefill.seconds)} for 2,000 tokens")
print(f"memory:            {fmt.gigabytes(result.memory.used_bytes)} of {labelled(BUDGET, result.memory.usable_bytes)}")

# %% [markdown]
# ## Throughput against batch size, at several contexts
#
# Each line stops where the KV cache no longer fits.

# %%
rows = []
hardware = roofline.Hardware(specs.gpu(GPU))
model = specs.model(MODEL)
for context in (0, 1000, 4000, 16000):
    for batch in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024):
        workload = roofline.Workload(model, batch=batch, context=context)
        if not roofline.memory_use(hardware, workload).fits:
            break
        step = roofline.decode_step(hardware, workload)
        rows.append({"context": f"{context:,} tokens", "batch": batch, "tokens/s": batch / step.seconds})

alt.Chart(alt.Data(values=rows)).mark_line(point=True).encode(
    x=alt.X("batch:Q", scale=alt.Scale(type="log", base=2), title="users in the batch"),
    y=alt.Y("tokens/s:Q", title="decode tokens/s, all users"),
    color=alt.Color("context:N", sort=None, title="context per user"),
).properties(width=560, height=300, title=f"{model.name} on one {hardware.gpu.name}")

# %% [markdown]
# ## Every GPU, one model
#
# The decode ceiling for one user follows memory bandwidth, GPU by GPU.

# %%
ceilings = []
for gpu in specs.gpus.values():
    workload = roofline.Workload(model)
    count = roofline.gpus_to_fit(roofline.Hardware(gpu), workload)
    estimate = roofline.evaluate(roofline.Hardware(gpu, count), workload)
    ceilings.append({"gpu": f"{gpu.name} × {count}", "tokens/s": estimate.decode_tokens_per_s_per_user})

alt.Chart(alt.Data(values=ceilings)).mark_bar().encode(
    x=alt.X("tokens/s:Q", title="decode tokens/s, one user"),
    y=alt.Y("gpu:N", sort="-x", title=None),
).properties(width=480, title=f"{model.name}, 16-bit weights")

# %% [markdown]
# ## The KV budget: users that fit, against context
#
# Chapter 2's question: how many users' caches fit in what the weights leave,
# `floor((usable memory - weights) / (context * KV bytes per token))`. Each
# halving of the bytes per cached value nearly doubles the users. The lines stop
# at the model's own limit, `max_context` (its config's `max_position_embeddings`).

# %%
limit = model.max_context or 131_072
budget = []
for kv_precision in ("bf16", "fp8", "int4"):
    context = 1024
    while context <= limit:
        workload = roofline.Workload(model, kv_precision=kv_precision, context=context)
        users = roofline.users_that_fit(hardware, workload)
        if users:
            budget.append({"KV cache": kv_precision, "context": context, "users": users})
        context *= 2

long = roofline.Workload(model, context=32_768)
users = roofline.users_that_fit(hardware, long)
full = roofline.Workload(model, batch=users, context=32_768)
print(f"at 32,768 tokens: {users} users fit, {fmt.rate(users / roofline.decode_step(hardware, full).seconds)} tokens/s")
print(f"the cache-read ceiling however many fit: {fmt.rate(roofline.kv_read_asymptote(hardware, long))} tokens/s")

alt.Chart(alt.Data(values=budget)).mark_line(point=True).encode(
    x=alt.X("context:Q", scale=alt.Scale(type="log", base=2), title="context per user, tokens"),
    y=alt.Y("users:Q", scale=alt.Scale(type="log"), title="users that fit"),
    color=alt.Color("KV cache:N", sort=None),
).properties(width=560, height=300, title=f"{model.name} on one {hardware.gpu.name}, 16-bit weights")

# %% [markdown]
# ## Serving a stream of requests
#
# Chapter 3's simulator: requests arrive at random (Poisson, 8 a second here),
# each with a 1,000-token prompt and a 250-token answer, and a scheduler batches
# them. Static batching waits for a whole batch to finish; continuous batching
# admits a request at any step; chunked prefill also caps the tokens per step.

# %%
served = []
for policy in ("static", "continuous", "chunked"):
    config = roofline.ServingConfig(
        policy=policy,
        rate=8.0,
        requests=300,
        prompt=roofline.Lengths(1000, 1000),
        output=roofline.Lengths(250, 250),
    )
    run = roofline.simulate(hardware, roofline.Workload(model), config)
    served.append({"policy": policy, "first token, p99 (s)": run.ttft_s[99], "tokens/s": run.throughput_tokens_per_s})
    print(
        f"{policy:10}  {fmt.rate(run.throughput_tokens_per_s)} tokens/s,"
        f" first token p50 {fmt.milliseconds(run.ttft_s[50])}, p99 {fmt.milliseconds(run.ttft_s[99])},"
        f" time per token p50 {fmt.milliseconds(run.tpot_s[50])}"
    )

alt.Chart(alt.Data(values=served)).mark_bar().encode(
    x=alt.X("first token, p99 (s):Q", title="time to first token, 99th percentile, s"),
    y=alt.Y("policy:N", sort=None, title=None),
).properties(width=480, title="The same traffic, three schedulers")
