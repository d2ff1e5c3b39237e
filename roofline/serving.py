"""A deterministic discrete-event simulator of one model replica serving a stream of requests.

Requests arrive as a Poisson process at ``rate`` per second (exponential gaps,
``-ln(1 - u) / rate`` with ``u`` from ``random.Random(seed)``, never the global
generator). Each has a prompt and an output length, fixed or uniform on LO:HI.
The GPU runs iterations back to back; each takes the roofline time of what it
does (``performance.IterationCosts``): the weights read, plus the KV of every
live request at its current length, against the FLOPs of every token processed.

Policies (what one iteration holds):

- ``static``: a batch of up to ``max_batch`` starts when the GPU is free and the
  queue holds ``max_batch`` requests, or its oldest has waited ``batch_wait_s``
  (0: start at once). Prompts are padded to the longest: one prefill of
  ``batch * longest prompt`` tokens. Then every slot decodes until the longest
  output ends; a slot whose request has finished computes padding. No one joins.
- ``continuous``: iteration-level scheduling. Between iterations finished requests
  leave and queued ones join; the newcomers' prompts are prefilled together in an
  iteration of their own, during which every streaming request waits.
- ``chunked``: every iteration holds at most ``token_budget`` tokens. Each decoding
  request adds its one token first; what is left of the budget goes to prefill
  chunks, oldest request first.

Memory admission: a request starts only when its whole prompt plus output fits in
free KV memory, in 16-token blocks: ``ceil((prompt + output) / 16)`` blocks out of
``floor((usable memory - weights) / (16 * KV bytes per token))``. It reserves
them all up front (static batches reserve the padded size) and frees them when
it ends. Requests wait in first-come order; a request too large for even an empty
GPU is counted as rejected when it arrives, never silently dropped.

Metrics, over the requests that complete (times from the request's arrival):
TTFT = first token - arrival; TPOT = (finish - first token) / (output - 1), the
mean time between its tokens (none for one-token outputs); latency = finish -
arrival = TTFT + (output - 1) * TPOT. Percentiles use the nearest rank: the p-th
of n sorted values is the ``ceil(p/100 * n)``-th, an actual sample, no
interpolation. The run lasts from time 0 to the last finish, ``duration``;
throughput = output tokens (or requests) / duration; goodput = requests meeting
both the TTFT and the TPOT target / duration; mean in flight = sum of latencies /
duration, which is the time-weighted mean count of requests arrived and not
finished; busy fraction = time spent in iterations / duration.

The same inputs and seed give the same floats in the same order, so
``json.dumps(result.to_dict())`` is byte-identical from run to run.
"""

from __future__ import annotations

import heapq
import math
import random
from collections import deque
from dataclasses import dataclass
from typing import Any, Literal

from .errors import SpecError, shown, unknown_name
from .parsing import parse_whole
from .performance import Hardware, IterationCosts, Workload, iteration_costs, memory_use

Policy = Literal["static", "continuous", "chunked"]
POLICIES: tuple[Policy, ...] = ("static", "continuous", "chunked")

#: KV-cache page size in tokens (vLLM's default block size).
BLOCK_TOKENS = 16
#: Most requests one run may simulate (about a second per 10,000 in CPython).
MAX_REQUESTS = 1_000_000
#: Longest prompt or output accepted, in tokens (beyond any real context window).
MAX_LENGTH_TOKENS = 10_000_000
#: Percentiles reported for TTFT, TPOT and latency.
PERCENTILES = (50, 90, 99)

#: Illustrative latency targets for goodput: a first token within a second, then at
#: least 20 tokens/s, faster than people read.
DEFAULT_TTFT_SLO_S = 1.0
DEFAULT_TPOT_SLO_S = 0.05


@dataclass(frozen=True)
class Lengths:
    """Token counts drawn uniformly from ``low`` to ``high`` inclusive (fixed when equal)."""

    low: int
    high: int

    def __post_init__(self) -> None:
        for value in (self.low, self.high):
            if isinstance(value, bool) or not isinstance(value, int):
                raise SpecError(f"must be whole numbers, got {value!r}")
        if not 1 <= self.low <= self.high <= MAX_LENGTH_TOKENS:
            raise SpecError(
                f"must satisfy 1 <= LO <= HI <= {MAX_LENGTH_TOKENS:,}, got {self}",
                hint="write N or LO:HI, e.g. 128:2048",
            )

    @property
    def mean(self) -> float:
        """The mean draw, ``(low + high) / 2``."""
        return (self.low + self.high) / 2

    def draw(self, rng: random.Random) -> int:
        """One length: ``low + floor(u * (high - low + 1))`` for ``u`` uniform on [0, 1)."""
        return self.low + int(rng.random() * (self.high - self.low + 1))

    def __str__(self) -> str:
        return str(self.low) if self.low == self.high else f"{self.low}:{self.high}"


def parse_lengths(text: str, field: str) -> Lengths:
    """``"N"`` (fixed) or ``"LO:HI"`` (uniform) as Lengths, each number as ``parsing.parse_whole``
    reads it (ASCII digits); a bad value raises SpecError naming ``field``, echoing it cut short."""
    parts = str(text).split(":")
    if len(parts) > 2:
        raise SpecError(f"must be N or LO:HI in tokens, got {shown(text)}", field=field, hint="e.g. 512 or 128:2048")
    try:
        # Range checked by Lengths, which names LO and HI; the digits' own limit keeps int() cheap.
        values = [parse_whole(part, (-MAX_LENGTH_TOKENS, MAX_LENGTH_TOKENS)) for part in parts]
        return Lengths(values[0], values[-1])
    except SpecError as error:
        raise SpecError(error.message, field=field, hint=error.hint or "write N or LO:HI, e.g. 128:2048") from None


#: Documented ranges, inclusive, that keep every time the simulator computes a finite float.
#: Arrivals per second: one a week to a billion a second (all at once, in effect).
RATE_RANGE = (1e-6, 1e9)
#: Latency targets, seconds: a microsecond to about eleven days.
SLO_RANGE_S = (1e-6, 1e6)
#: Requests in flight at once, and tokens in one chunked iteration.
MAX_BATCH_RANGE = (1, 1_000_000)
TOKEN_BUDGET_RANGE = (1, 100_000_000)
#: Seeds of random.Random: any 64-bit value.
SEED_RANGE = (0, 2**64 - 1)


def _check_number(
    field: str, value: object, *, minimum: float, whole: bool, inclusive: bool = True, maximum: float | None = None
) -> None:
    kind = int if whole else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind) or (not whole and not math.isfinite(value)):
        raise SpecError(f"must be a {'whole ' if whole else ''}number, got {shown(value)}", field=field)
    if value < minimum or (not inclusive and value == minimum):
        raise SpecError(f"must be {'at least' if inclusive else 'above'} {minimum:g}, got {shown(value)}", field=field)
    if maximum is not None and value > maximum:
        raise SpecError(f"must be at most {maximum:g}, got {shown(value)}", field=field)


@dataclass(frozen=True)
class ServingConfig:
    """The traffic and the scheduler: everything but the hardware and the model."""

    policy: Policy = "continuous"
    rate: float = 10.0
    requests: int = 1000
    prompt: Lengths = Lengths(512, 512)
    output: Lengths = Lengths(256, 256)
    max_batch: int = 64
    token_budget: int = 512
    ttft_slo_s: float = DEFAULT_TTFT_SLO_S
    tpot_slo_s: float = DEFAULT_TPOT_SLO_S
    seed: int = 0
    batch_wait_s: float = 0.0
    trace_requests: int = 20

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise unknown_name("policy", str(self.policy), POLICIES).located(field="policy")
        _check_number("rate", self.rate, minimum=RATE_RANGE[0], maximum=RATE_RANGE[1], whole=False)
        _check_number("requests", self.requests, minimum=1, whole=True)
        if self.requests > MAX_REQUESTS:
            raise SpecError(f"must be at most {MAX_REQUESTS:,}, got {self.requests:,}", field="requests")
        for name in ("prompt", "output"):
            if not isinstance(getattr(self, name), Lengths):
                raise SpecError("must be Lengths (see parse_lengths)", field=name)
        _check_number("max_batch", self.max_batch, minimum=1, maximum=MAX_BATCH_RANGE[1], whole=True)
        _check_number("token_budget", self.token_budget, minimum=1, maximum=TOKEN_BUDGET_RANGE[1], whole=True)
        if self.policy == "chunked" and self.token_budget <= self.max_batch:
            raise SpecError(
                f"must exceed the max batch ({self.max_batch}) so a prefill chunk always fits, got {self.token_budget}",
                field="token_budget",
            )
        for name in ("ttft_slo_s", "tpot_slo_s"):
            _check_number(name, getattr(self, name), minimum=SLO_RANGE_S[0], maximum=SLO_RANGE_S[1], whole=False)
        _check_number("seed", self.seed, minimum=0, maximum=SEED_RANGE[1], whole=True)
        _check_number("batch_wait_s", self.batch_wait_s, minimum=0, whole=False)
        _check_number("trace_requests", self.trace_requests, minimum=0, whole=True)


@dataclass(frozen=True)
class RequestTrace:
    """One request's life, for a timeline: when it arrived, was admitted, got its first
    token and finished (None if rejected), and the spans of iterations it took part in.

    Each span is ``(kind, start_s, end_s, iterations)`` with kind ``prefill``,
    ``decode`` or ``padding`` (a static slot computing after its request ended);
    back-to-back iterations of one kind merge into one span, so a gap is a stall.
    """

    id: int
    prompt: int
    output: int
    arrival_s: float
    admitted_s: float | None
    first_token_s: float | None
    finish_s: float | None
    spans: tuple[tuple[str, float, float, int], ...]

    def to_dict(self) -> dict[str, Any]:
        """The trace as plain JSON values."""
        return {
            "id": self.id,
            "prompt": self.prompt,
            "output": self.output,
            "arrival_s": self.arrival_s,
            "admitted_s": self.admitted_s,
            "first_token_s": self.first_token_s,
            "finish_s": self.finish_s,
            "spans": [list(span) for span in self.spans],
        }


@dataclass(frozen=True)
class SimulationResult:
    """The metrics of one run (see the module docstring for each definition) and the
    traces of its first ``config.trace_requests`` requests."""

    config: ServingConfig
    requests: int
    completed: int
    rejected: int
    duration_s: float
    busy_s: float
    iterations: int
    output_tokens: int
    ttft_s: dict[int, float | None]
    tpot_s: dict[int, float | None]
    latency_s: dict[int, float | None]
    latency_mean_s: float | None
    queue_wait_mean_s: float | None
    good: int
    latency_sum_s: float
    kv_blocks: int
    trace: tuple[RequestTrace, ...]

    def _per_second(self, count: float) -> float:
        return count / self.duration_s if self.duration_s > 0 else 0.0

    @property
    def throughput_tokens_per_s(self) -> float:
        """Output tokens of completed requests / duration."""
        return self._per_second(self.output_tokens)

    @property
    def throughput_requests_per_s(self) -> float:
        """Completed requests / duration."""
        return self._per_second(self.completed)

    @property
    def goodput_requests_per_s(self) -> float:
        """Completed requests within both the TTFT and the TPOT target / duration."""
        return self._per_second(self.good)

    @property
    def mean_in_flight(self) -> float:
        """Time-weighted mean of requests arrived and not finished: sum of latencies / duration."""
        return self._per_second(self.latency_sum_s)

    @property
    def busy_fraction(self) -> float:
        """Share of the run the GPU spends in iterations: busy time / duration."""
        return self.busy_s / self.duration_s if self.duration_s > 0 else 0.0

    def to_dict(self, *, trace: bool = False) -> dict[str, Any]:
        """Plain JSON values: the CLI's ``--json`` keys, then run facts; traces if asked."""
        result: dict[str, Any] = {
            "completed": self.completed,
            "throughput_tokens_per_s": self.throughput_tokens_per_s,
            "throughput_requests_per_s": self.throughput_requests_per_s,
        }
        for name, values in (("ttft", self.ttft_s), ("tpot", self.tpot_s)):
            for percentile in PERCENTILES:
                result[f"{name}_p{percentile}_s"] = values[percentile]
        result.update(
            {
                "latency_mean_s": self.latency_mean_s,
                "mean_in_flight": self.mean_in_flight,
                "goodput_requests_per_s": self.goodput_requests_per_s,
                "busy_fraction": self.busy_fraction,
                "policy": self.config.policy,
                "requests": self.requests,
                "rejected": self.rejected,
                "duration_s": self.duration_s,
                "iterations": self.iterations,
                "queue_wait_mean_s": self.queue_wait_mean_s,
                "kv_blocks": self.kv_blocks,
            }
        )
        for percentile in PERCENTILES:
            result[f"latency_p{percentile}_s"] = self.latency_s[percentile]
        if trace:
            result["trace"] = [request.to_dict() for request in self.trace]
        return result


def percentile(sorted_values: list[float], p: float) -> float | None:
    """Nearest rank: the ``ceil(p/100 * n)``-th smallest of n values (None when empty)."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def kv_blocks_available(hardware: Hardware, workload: Workload) -> int:
    """KV blocks that fit beside the weights: ``chapter 2's largest batch at a 16-token context``,
    i.e. ``floor((usable - weights) / (16 * KV bytes per token))``. Raises SpecError when the
    weights alone do not fit."""
    one_block = Workload(workload.model, workload.weight_precision, workload.kv_precision, context=BLOCK_TOKENS)
    use = memory_use(hardware, one_block)
    if not use.max_batch:
        raise SpecError(
            f"the weights ({use.weights_bytes / 1e9:,.1f} GB) leave no room for a KV cache"
            f" in {use.usable_bytes / 1e9:,.1f} GB usable",
            field="gpus",
            hint="add GPUs or use a smaller weight precision",
        )
    return use.max_batch


def blocks_for(tokens: int) -> int:
    """16-token blocks holding ``tokens`` tokens: ``ceil(tokens / 16)``."""
    return -(-tokens // BLOCK_TOKENS)


def _steady_run(
    memory0: float, memory_slope: float, compute0: float, compute_slope: float, steps: int
) -> tuple[float, float] | None:
    """Decode steps whose context grows by the same amount each step have memory and compute
    times linear in the step number, ``memory0 + memory_slope * i`` and the like. When one of
    the two is the larger at both the first and the last of ``steps`` steps, it is the larger
    throughout: return its (first step's time, growth per step). None when they cross."""
    last = steps - 1
    memory_last, compute_last = memory0 + memory_slope * last, compute0 + compute_slope * last
    if memory0 >= compute0 and memory_last >= compute_last:
        return memory0, memory_slope
    if memory0 <= compute0 and memory_last <= compute_last:
        return compute0, compute_slope
    return None


def _run_seconds(first: float, slope: float, steps: int) -> float:
    """Total time of ``steps`` steps taking ``first + slope * i``: ``k*first + slope*k*(k-1)/2``."""
    return steps * first + slope * (steps * (steps - 1) / 2)


def _steps_to_reach(first: float, slope: float, gap: float, most: int) -> int:
    """Fewest steps, from 1 to ``most``, whose total time reaches ``gap`` (``most`` if none does):
    the positive root of ``slope/2 k^2 + (first - slope/2) k = gap``, then nudged to the exact
    integer against ``_run_seconds`` itself, so rounding in the root cannot shift it."""
    if gap <= first:
        return 1
    if _run_seconds(first, slope, most) < gap:
        return most
    if slope > 0:
        linear = first - slope / 2
        steps = math.ceil((math.sqrt(linear * linear + 2 * slope * gap) - linear) / slope)
    else:
        steps = math.ceil(gap / first)
    steps = min(max(steps, 1), most)
    while steps > 1 and _run_seconds(first, slope, steps - 1) >= gap:
        steps -= 1
    while _run_seconds(first, slope, steps) < gap:
        steps += 1
    return steps


class _Run:
    """The mutable state of one simulation; ``simulate`` is its only user."""

    def __init__(self, costs: IterationCosts, config: ServingConfig, capacity: int) -> None:
        self.config = config
        self.capacity = capacity
        rng = random.Random(config.seed)
        count = config.requests
        arrival, prompt, output = [0.0] * count, [0] * count, [0] * count
        clock = 0.0
        for index in range(count):  # fixed draw order: gap, prompt, output
            clock += -math.log(1.0 - rng.random()) / config.rate
            arrival[index] = clock
            prompt[index] = config.prompt.draw(rng)
            output[index] = config.output.draw(rng)
        self.arrival, self.prompt, self.output = arrival, prompt, output
        #: KV blocks each request reserves: its whole prompt plus output.
        self.blocks = [blocks_for(p + o) for p, o in zip(prompt, output, strict=True)]
        self.admitted: list[float | None] = [None] * count
        self.first: list[float | None] = [None] * count
        self.finish: list[float | None] = [None] * count
        self.rejected = 0
        self.next_arrival = 0
        self.queue: deque[int] = deque()
        self.now = 0.0
        self.busy = 0.0
        self.iterations = 0
        self.free_blocks = capacity
        # Seconds per unit of work, so the hot loops do plain arithmetic.
        self.bandwidth = costs.bandwidth_bytes_per_s
        self.peak = costs.peak_flops_per_s
        self.kv_s = costs.kv_bytes_per_token / self.bandwidth
        self.layer_s = costs.layer_flops_per_token / self.peak
        self.head_s = costs.head_flops_per_token / self.peak
        self.matmul_s = self.layer_s + self.head_s  # one decode token: the layers and the head
        self.decode_attention_s = costs.decode_attention_flops_per_cached_token / self.peak
        self.prefill_attention_s = costs.prefill_attention_flops_per_pair / self.peak
        self._costs = costs
        self._weights_s: dict[int, float] = {}
        self.traced = min(config.trace_requests, count)
        self.spans: list[list[list]] = [[] for _ in range(self.traced)]

    def weights_s(self, tokens: int) -> float:
        """Seconds to read the weights ``tokens`` tokens touch (memoized: the same few counts recur)."""
        seconds = self._weights_s.get(tokens)
        if seconds is None:
            seconds = self._weights_s[tokens] = self._costs.weights_bytes(tokens) / self.bandwidth
        return seconds

    def iteration_s(
        self, decodes: int, decode_context: int, new: int, cached: int, pairs: float, finished: int
    ) -> float:
        """``IterationCosts.iteration(...).seconds``, from the per-unit times (``finished``:
        prompts whose last token is in this iteration, so their next token is predicted)."""
        memory = self.weights_s(decodes + new) + self.kv_s * (decode_context + cached + new)
        compute = self.matmul_s * decodes + self.layer_s * new + self.head_s * finished
        compute += self.decode_attention_s * decode_context
        compute += self.prefill_attention_s * pairs
        return memory if memory >= compute else compute

    def run_iteration(self, seconds: float) -> None:
        self.now += seconds
        self.busy += seconds
        self.iterations += 1

    def enqueue_arrivals(self) -> None:
        """Move every request that has arrived by now into the queue, or count it as rejected
        when its whole prompt plus output could never fit, even on an empty GPU."""
        arrival, index, count = self.arrival, self.next_arrival, self.config.requests
        while index < count and arrival[index] <= self.now:
            if self.blocks[index] > self.capacity:
                self.rejected += 1
            else:
                self.queue.append(index)
            index += 1
        self.next_arrival = index

    def wait_for_arrival(self) -> bool:
        """Idle until the next arrival; False when none is left."""
        if self.next_arrival >= self.config.requests:
            return False
        self.now = max(self.now, self.arrival[self.next_arrival])
        return True

    def span(self, index: int, kind: str, start: float, end: float, iterations: int) -> None:
        """Record that traced request ``index`` took part in iterations from start to end."""
        spans = self.spans[index]
        if spans and spans[-1][0] == kind and spans[-1][2] == start:
            spans[-1][2] = end
            spans[-1][3] += iterations
        else:
            spans.append([kind, start, end, iterations])

    # -- static ---------------------------------------------------------------------------------

    def run_static(self) -> None:
        config, queue = self.config, self.queue
        while True:
            self.enqueue_arrivals()
            if not queue:
                if not self.wait_for_arrival():
                    return
                continue
            oldest_waited = self.now - self.arrival[queue[0]]
            more_coming = self.next_arrival < config.requests
            if len(queue) < config.max_batch and oldest_waited < config.batch_wait_s and more_coming:
                self.now = min(self.arrival[self.next_arrival], self.arrival[queue[0]] + config.batch_wait_s)
                continue
            self.static_batch(self.form_static_batch())

    def form_static_batch(self) -> list[int]:
        """First come first served, while the padded batch fits: ``B * blocks(longest prompt + longest output)``."""
        queue, members = self.queue, []
        longest_prompt = longest_output = 0
        while queue and len(members) < self.config.max_batch:
            index = queue[0]
            padded_prompt = max(longest_prompt, self.prompt[index])
            padded_output = max(longest_output, self.output[index])
            if (len(members) + 1) * blocks_for(padded_prompt + padded_output) > self.capacity:
                break
            members.append(queue.popleft())
            longest_prompt, longest_output = padded_prompt, padded_output
        return members

    def static_batch(self, members: list[int]) -> None:
        size = len(members)
        longest_prompt = max(self.prompt[index] for index in members)
        longest_output = max(self.output[index] for index in members)
        start = self.now
        for index in members:
            self.admitted[index] = start
        pairs = size * longest_prompt * (longest_prompt + 1) / 2
        self.run_iteration(self.iteration_s(0, 0, size * longest_prompt, 0, pairs, size))
        prefill_end = self.now
        # Token j (j >= 2) of every slot comes from decode step j - 1 at padded length P + j - 1.
        steps = longest_output - 1
        context = size * (longest_prompt + 1)
        weights, kv_s, matmul = self.weights_s(size), self.kv_s, self.matmul_s * size
        attention = self.decode_attention_s
        memory0, compute0 = weights + kv_s * context, matmul + attention * context
        steady = _steady_run(memory0, kv_s * size, compute0, attention * size, steps)
        if steady is not None:
            token_times = None
            end = prefill_end + _run_seconds(*steady, steps)
        else:  # memory and compute cross within the batch: step by step
            token_times = [prefill_end]
            now = prefill_end
            for _ in range(steps):
                memory = weights + kv_s * context
                compute = matmul + attention * context
                now += memory if memory >= compute else compute
                token_times.append(now)
                context += size
            end = now
        self.iterations += steps
        self.busy += end - prefill_end
        self.now = end
        for index in members:
            own_steps = self.output[index] - 1
            self.first[index] = prefill_end
            if token_times is None:
                finish = end if own_steps == steps else prefill_end + _run_seconds(*steady, own_steps)
            else:
                finish = token_times[own_steps]
            self.finish[index] = finish
            if index < self.traced:
                self.span(index, "prefill", start, prefill_end, 1)
                if own_steps:
                    self.span(index, "decode", prefill_end, finish, own_steps)
                if own_steps < steps:
                    self.span(index, "padding", finish, end, steps - own_steps)

    # -- continuous and chunked -----------------------------------------------------------------

    def run_iterative(self) -> None:
        """Iteration-level scheduling; ``chunked`` caps each iteration at the token budget."""
        config, queue = self.config, self.queue
        chunked = config.policy == "chunked"
        prompt, output, blocks, traced = self.prompt, self.output, self.blocks, self.traced
        prefilling: deque[list[int]] = deque()  # [request, prompt tokens already cached]
        finishing: list[tuple[int, int]] = []  # (decode step at which it ends, request)
        decoders: list[int] = []  # traced requests now decoding
        running = decodes = decode_context = step = 0
        while True:
            # Between iterations: admit from the queue while the batch and the memory allow.
            self.enqueue_arrivals()
            while queue and running < config.max_batch:
                need = blocks[queue[0]]
                if need > self.free_blocks:
                    break  # first come first served: later requests wait behind it
                index = queue.popleft()
                self.free_blocks -= need
                self.admitted[index] = self.now
                prefilling.append([index, 0])
                running += 1
            if running == 0:
                if not self.wait_for_arrival():
                    return
                continue
            start = self.now
            if prefilling:
                # A prefill (continuous: every newcomer whole; chunked: decodes first, then chunks).
                budget = config.token_budget - decodes if chunked else math.inf
                new = cached = 0
                pairs = 0.0
                chunks = []
                for entry in prefilling:
                    if budget <= 0:
                        break
                    index, done = entry
                    chunk = min(prompt[index] - done, budget)
                    budget -= chunk
                    new += chunk
                    cached += done
                    pairs += chunk * done + chunk * (chunk + 1) / 2
                    chunks.append((entry, chunk))
                with_decodes = decodes if chunked else 0
                finished = sum(1 for (index, done), chunk in chunks if done + chunk == prompt[index])
                context = decode_context if chunked else 0
                self.run_iteration(self.iteration_s(with_decodes, context, new, cached, pairs, finished))
                if with_decodes:
                    step += 1
                    decode_context += decodes
                    for index in decoders:
                        self.span(index, "decode", start, self.now, 1)
                for entry, chunk in chunks:
                    index = entry[0]
                    entry[1] += chunk
                    if index < traced:
                        self.span(index, "prefill", start, self.now, 1)
                    if entry[1] < prompt[index]:
                        continue
                    prefilling.popleft()  # chunks are taken in order, so a finished one is first
                    self.first[index] = self.now
                    if output[index] == 1:
                        self.finish[index] = self.now
                        self.free_blocks += blocks[index]
                        running -= 1
                        continue
                    decodes += 1
                    decode_context += prompt[index] + 1
                    heapq.heappush(finishing, (step + output[index] - 1, index))
                    if index < traced:
                        decoders.append(index)
            else:
                # Decode steps back to back until someone finishes or a newcomer could join.
                end_step = finishing[0][0]
                can_join = running < config.max_batch
                next_arrival = self.arrival[self.next_arrival] if self.next_arrival < config.requests else math.inf
                weights = self.weights_s(decodes)
                kv_s, matmul = self.kv_s, self.matmul_s * decodes
                attention = self.decode_attention_s
                now, first_step = self.now, step
                memory0, compute0 = weights + kv_s * decode_context, matmul + attention * decode_context
                steady = _steady_run(memory0, kv_s * decodes, compute0, attention * decodes, end_step - step)
                if steady is not None:  # one side bounds every step: the times are an arithmetic series
                    steps = end_step - step
                    if can_join and next_arrival < math.inf:
                        steps = _steps_to_reach(*steady, next_arrival - now, steps)
                    now += _run_seconds(*steady, steps)
                    decode_context += decodes * steps
                    step += steps
                else:
                    while step < end_step:  # memory and compute cross within the run: step by step
                        memory = weights + kv_s * decode_context
                        compute = matmul + attention * decode_context
                        now += memory if memory >= compute else compute
                        decode_context += decodes
                        step += 1
                        if can_join and now >= next_arrival:
                            break
                self.iterations += step - first_step
                self.busy += now - self.now
                self.now = now
                for index in decoders:
                    self.span(index, "decode", start, now, step - first_step)
            while finishing and finishing[0][0] == step:
                _, index = heapq.heappop(finishing)
                self.finish[index] = self.now
                decodes -= 1
                decode_context -= prompt[index] + output[index]
                self.free_blocks += blocks[index]
                running -= 1
                if index < traced:
                    decoders.remove(index)

    # -- results --------------------------------------------------------------------------------

    def result(self) -> SimulationResult:
        config = self.config
        ttfts, tpots, latencies, waits = [], [], [], []
        duration = output_tokens = good = 0
        for index in range(config.requests):
            finish = self.finish[index]
            if finish is None:
                continue
            arrival, first = self.arrival[index], self.first[index]
            ttft, latency = first - arrival, finish - arrival
            ttfts.append(ttft)
            latencies.append(latency)
            waits.append(self.admitted[index] - arrival)
            output_tokens += self.output[index]
            duration = max(duration, finish)
            tpot = (finish - first) / (self.output[index] - 1) if self.output[index] > 1 else None
            if tpot is not None:
                tpots.append(tpot)
            if ttft <= config.ttft_slo_s and (tpot is None or tpot <= config.tpot_slo_s):
                good += 1
        latency_sum = math.fsum(latencies)
        completed = len(latencies)
        for values in (ttfts, tpots, latencies):
            values.sort()
        trace = tuple(
            RequestTrace(
                id=index,
                prompt=self.prompt[index],
                output=self.output[index],
                arrival_s=self.arrival[index],
                admitted_s=self.admitted[index],
                first_token_s=self.first[index],
                finish_s=self.finish[index],
                spans=tuple((kind, start, end, count) for kind, start, end, count in self.spans[index]),
            )
            for index in range(self.traced)
        )
        return SimulationResult(
            config=config,
            requests=config.requests,
            completed=completed,
            rejected=self.rejected,
            duration_s=float(duration),
            busy_s=self.busy,
            iterations=self.iterations,
            output_tokens=output_tokens,
            ttft_s={p: percentile(ttfts, p) for p in PERCENTILES},
            tpot_s={p: percentile(tpots, p) for p in PERCENTILES},
            latency_s={p: percentile(latencies, p) for p in PERCENTILES},
            latency_mean_s=latency_sum / completed if completed else None,
            queue_wait_mean_s=math.fsum(waits) / completed if completed else None,
            good=good,
            latency_sum_s=latency_sum,
            kv_blocks=self.capacity,
            trace=trace,
        )


def simulate(hardware: Hardware, workload: Workload, config: ServingConfig) -> SimulationResult:
    """Serve ``config.requests`` requests of ``workload.model`` (at its weight and KV precisions;
    its batch, context and prompt are not used) on ``hardware`` and measure the result.

    Raises SpecError when the weights leave no room for a KV cache, or when the model has
    sliding-window layers: the simulator counts every layer's cache as growing with the
    request, which would overstate a windowed model's memory and reads.
    """
    model = workload.model
    if model.sliding_window:
        raise SpecError(
            f"{model.id} has sliding-window layers, which the simulator does not model yet",
            field="model",
            hint="simulate a model whose every layer is global (roofline list models)",
        )
    run = _Run(iteration_costs(hardware, workload), config, kv_blocks_available(hardware, workload))
    if config.policy == "static":
        run.run_static()
    else:
        run.run_iterative()
    return run.result()
