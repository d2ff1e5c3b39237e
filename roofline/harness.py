"""What a published serving figure includes besides the GPU's work: its harness and its engine.

A measurement is the GPU's passes plus whatever the benchmark puts round them. Four harnesses
are told apart (``HARNESSES``), each with its own host costs in ``data/calibration.toml``
(``[harness.<name>]``), fitted on the rows measured through it and never on the others:

- ``offline``: the engine's own loop (trtllm-bench, vLLM's offline ``LLM``), requests already
  tokenized in the process. A request is in the engine's queue when its clock starts, so its
  host time per request is 0 by construction, not fitted; its time per sampled token (sampling,
  stop checks, the scheduler's bookkeeping) is fitted.
- ``session``: TensorRT-LLM's gptSessionBenchmark (releases 0.5 to 0.9, rows labelled
  "(static)"): one static batch at a time through a TensorRT engine, every pass either all
  context or all generation, requests tokenized in the process (0 s a request, as offline).
  Besides its token time it has a third cost, ``context_serial_share`` κ: a context pass takes
  ``max(memory, compute) + κ * min(memory, compute)``, its reads and its math overlapped only in
  part. Its rows need it: at κ = 0 the batch-1 128-token times to first token of releases 0.5
  and 0.9 land at 1.2 to 1.65 times the expected figure on every GPU (an A100's almost exactly
  the sum of the reads and the math), while their 2,048-token ones and their static
  throughputs land near 1. TensorRT-LLM 0.14's inflight-batching runs of 467-token prompts at
  low load already land at 0.85 to 0.96 with κ = 0, and would fall to 0.75 to 0.91 with κ = 0.8,
  so the other harnesses keep 0 (``SERIAL_CONTEXT_HARNESSES``). Why those engines did not
  overlap them is not read in their source; one candidate is that TensorRT picks a context
  pass's kernels apart from a generation step's (the 0.6.1 document builds GPT-J's engine with
  ``--enable_two_optimization_profiles``). The share is measured, not explained.
- ``server``: the engine behind an inference server (Triton's TensorRT-LLM backend), a load
  generator sending requests over the network; the server tokenizes and detokenizes.
- ``http``: an OpenAI-compatible HTTP front end streaming tokens to a benchmark client that
  tokenizes too (``vllm serve`` with ``benchmark_serving``, ``trtllm-serve``, NIM with
  genai-perf/AIPerf).

A serving figure costs, besides the passes, ``request_overhead_s`` once per request (its
way to the scheduler: the simulator delays each arrival by it) and ``token_overhead_s`` per
token sampled in an iteration; both are the harness's, as is ``context_serial_share`` where
the harness has one.

An engine (``ENGINES``) is read off a row's ``engine`` column (``engine_of``): TensorRT-LLM and
NIM (built on it) are one engine; its release is the whole label, as the leave-one-release-out
check groups rows. The fit is shared by every engine; an engine or a GPU the fit set has no
row for is used all the same, but its band is the wider one the fit measured on releases and
GPUs it left out (``Calibration.for_ground``).
"""

from __future__ import annotations

from .errors import SpecError, did_you_mean

#: Harness -> what its measurement includes, as a report says it.
HARNESSES: dict[str, str] = {
    "offline": "the engine's own loop, requests tokenized in the process: no request path",
    "session": "static batches through a TensorRT engine (gptSessionBenchmark): no request path",
    "server": "the engine behind an inference server (Triton), requests over the network",
    "http": "an OpenAI-compatible HTTP server streaming to a client that tokenizes",
}


def harness_choices() -> str:
    """Every harness with what its measurement includes (``HARNESSES``), as one line for a help
    text or a hint: the one wording a reader meets wherever a harness is chosen."""
    return "; ".join(f"{name}, {what}" for name, what in HARNESSES.items())


#: Harnesses whose requests are tokenized in the engine's own process: 0 s a request, not fitted.
NO_REQUEST_PATH = frozenset({"offline", "session"})
#: Harnesses whose context passes overlap their reads and math only in part: each has a fitted
#: ``context_serial_share``; every other harness's is 0.
SERIAL_CONTEXT_HARNESSES = frozenset({"session"})
#: The harness ``--costs expected`` assumes when none is named.
DEFAULT_HARNESS = "server"
#: Engine id -> its name, as a report says it.
ENGINES: dict[str, str] = {
    "tensorrt-llm": "TensorRT-LLM",
    "vllm": "vLLM",
    "sglang": "SGLang",
    "lmdeploy": "LMDeploy",
    "vllm-rocm": "vLLM on ROCm",
}
#: The engine ``--costs expected`` assumes when none is named (the one the fit set holds).
DEFAULT_ENGINE = "tensorrt-llm"
#: A row's engine label, lower-cased, starts with one of these -> the engine id. NIM serves
#: TensorRT-LLM engines (its rows say "NIM 1.8.0 (TensorRT-LLM)"); Sarathi-Serve is a vLLM fork.
_LABEL_PREFIXES = (
    ("tensorrt-llm", "tensorrt-llm"),
    ("nim", "tensorrt-llm"),
    ("vllm-rocm", "vllm-rocm"),
    ("vllm", "vllm"),
    ("sarathi", "vllm"),
    ("sglang", "sglang"),
    ("lmdeploy", "lmdeploy"),
)


def engine_of(label: str) -> str | None:
    """The engine id of a row's ``engine`` label ("TensorRT-LLM 0.17" -> "tensorrt-llm"); None
    when the label names none of ``ENGINES``."""
    text = label.strip().lower()
    return next((engine for prefix, engine in _LABEL_PREFIXES if text.startswith(prefix)), None)


def check_harness(name: str, field: str = "harness") -> str:
    """``name`` if it is one of ``HARNESSES``; else one SpecError naming the choices."""
    if name not in HARNESSES:
        raise SpecError(f"unknown harness {name!r}", field=field, hint=_choices(name, HARNESSES))
    return name


def check_engine(name: str, field: str = "engine") -> str:
    """``name`` if it is one of ``ENGINES``; else one SpecError naming the choices."""
    if name not in ENGINES:
        raise SpecError(f"unknown engine {name!r}", field=field, hint=_choices(name, ENGINES))
    return name


def _choices(name: str, choices: dict[str, str]) -> str:
    """``"did you mean 'http'? choose one of offline, session, server, http"``: the choices always named."""
    listed = f"choose one of {', '.join(choices)}"
    close = did_you_mean(str(name), tuple(choices))
    return f"{close} {listed}" if close else listed
