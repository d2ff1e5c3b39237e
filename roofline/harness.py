"""What a published serving figure includes besides the GPU's work: its harness and its engine.

A measurement is the GPU's passes plus whatever the benchmark puts round them. Three harnesses
are told apart (``HARNESSES``), each with its own host costs in ``data/calibration.toml``
(``[harness.<name>]``), fitted on the rows measured through it and never on the others:

- ``offline``: the engine's own loop (trtllm-bench, gptSessionBenchmark, vLLM's offline
  ``LLM``), requests already tokenized in the process. A request is in the engine's queue when
  its clock starts, so its host time per request is 0 by construction, not fitted; its time
  per sampled token (sampling, stop checks, the scheduler's bookkeeping) is fitted.
- ``server``: the engine behind an inference server (Triton's TensorRT-LLM backend), a load
  generator sending requests over the network; the server tokenizes and detokenizes.
- ``http``: an OpenAI-compatible HTTP front end streaming tokens to a benchmark client that
  tokenizes too (``vllm serve`` with ``benchmark_serving``, ``trtllm-serve``, NIM with
  genai-perf/AIPerf).

A serving figure costs, besides the passes, ``request_overhead_s`` once per request (its
way to the scheduler: the simulator delays each arrival by it) and ``token_overhead_s`` per
token sampled in an iteration; both are the harness's.

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
    "server": "the engine behind an inference server (Triton), requests over the network",
    "http": "an OpenAI-compatible HTTP server streaming to a client that tokenizes",
}
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
    """``"did you mean 'http'? choose one of offline, server, http"``: the choices always named."""
    listed = f"choose one of {', '.join(choices)}"
    close = did_you_mean(str(name), tuple(choices))
    return f"{close} {listed}" if close else listed
