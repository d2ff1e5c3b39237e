"""The calculator "What does speculative decoding buy?" (``<!-- roofline:calculator speculate -->``).

It prices one round of speculative decoding with ``roofline.speculative``: γ draft
steps and one verification pass of B·(γ+1) tokens, against a plain decode step at the
same batch. Every figure is given twice, side by side and named: the **ceiling** (the
package's roofline times, an upper bound) and the **expected** figure (the costs
``data/calibration.toml`` fitted to published runs, with the band of that fit's
residuals). The band was fitted to runs without speculation, and the view says so.
With speculation one user's tokens/s may pass the plain ceiling; that figure is flagged
as speculative in words, never shown as a plain ceiling.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from roofline import Hardware, SpecError, Workload, builtin_specs, memory_use
from roofline import formatting as fmt
from roofline.calibration import UNFITTED_FLAG, GroundedCosts, expected_costs, load_calibration
from roofline.forms import Field, Form, Output, draft_menu, model_menu
from roofline.memorykinds import BUDGET, labelled
from roofline.performance import gpu_count_problem, resolved
from roofline.speculative import GAMMA_RANGE, Round, Rounds

#: The draft menu's first entry: no draft model, the cost field below instead.
GIVEN_COST = "given-cost"
#: Batches the chart samples: 1, 2, 4 … 4096.
CHART_BATCHES = tuple(2**power for power in range(13))
NOT_APPLICABLE = "—"
_SPECS = builtin_specs()

FORM = Form(
    title="What does speculative decoding buy?",
    legend="Deployment and drafter",
    fields=[
        Field.gpu("gpu", "GPU", _SPECS, default="h100-sxm"),
        Field.model("model", "Target model", _SPECS, default="llama-3.1-8b"),
        Field.choice(
            "draft",
            "Drafter",
            [(GIVEN_COST, "A draft cost I give (below)"), *draft_menu(_SPECS), *model_menu(_SPECS)],
            default="llama-3.2-1b",
            wide=True,
        ),
        Field.number("draft_cost", "Draft cost (draft step ÷ target step)", low=0, high=10, default=0.1, step=0.01),
        Field.number("alpha", "Acceptance rate α", low=0, high=1, default=0.8, step=0.01),
        Field.number("gamma", "Draft tokens per round γ", low=GAMMA_RANGE[0], high=GAMMA_RANGE[1], default=4),
        Field.number("batch", "Users decoding together", low=1, high=4096, default=1),
        Field.number("context", "Context (tokens per user)", low=0, high=131072, default=0),
        Field.number("gpus", "GPUs", low=1, high=64, default=1),
    ],
    outputs=[
        Output.text("tau", "Tokens per verification step, τ"),
        Output.text("speedup", "Speedup over plain decoding (ceiling · expected)"),
        Output.text("per_user", "Tokens/s per user with speculation, ceiling"),
        Output.text("expected", "Expected tokens/s per user, with band"),
        Output.text("baseline", "Without speculation (ceiling · expected)"),
        Output.text("draft_share", "Draft step ÷ target step (ceiling · expected)"),
        Output.text("verification", "Verification pass, ceiling"),
        Output.text("break_even", "Batch where speculation stops paying, ceiling"),
        Output.vega(
            "chart",
            "Speedup over plain decoding against the number of users, at the ceiling and at the expected costs"
            " (batch axis logarithmic); below 1 speculation is a slowdown. Computed by the roofline package in"
            " your browser.",
        ),
    ],
)
#: The inputs' defaults (the form's), for tests and the benchmark.
DEFAULTS: dict[str, Any] = FORM.defaults


def _times(value: float) -> str:
    return f"{value:.2f}×"


def _users(batch: float | None, most: int | None) -> str:
    """A break-even batch in words: a number of users, or why there is none."""
    if batch is not None and batch <= 1:
        return "1 user (it does not pay even alone)"
    if batch is not None:
        return f"{fmt.users(batch)} users"
    return "never (up to a million users)" if most is None else f"none up to the {most:,} users that fit"


def _break_even(rounds: Rounds, alpha: float, most: int | None) -> float | None:
    """The rounds' break-even batch, or None when speculation still pays at ``most`` users, the
    most whose caches fit: a break-even past them is one no server reaches, and skipping its search
    (doubling up to a million users) keeps the calculator quick on long contexts."""
    if most is not None and rounds.at(max(most, 1)).speedup(alpha) > 1:
        return None
    return rounds.break_even(alpha)


def _chart(ceiling: dict[int, float], expected: dict[int, float], batch: int) -> dict[str, Any]:
    """Speedup against users for both cost models, a rule at 1 and the chosen batch marked."""
    series = ["ceiling", "expected"]
    rows = [
        {"users": users, "costs": name, "speedup": round(value, 4)}
        for name, points in (("ceiling", ceiling), ("expected", expected))
        for users, value in points.items()
    ]
    x = {
        "field": "users",
        "type": "quantitative",
        "title": "users decoding together",
        "scale": {"type": "log", "base": 2, "domain": [1, CHART_BATCHES[-1]]},
        "axis": {"values": [4**power for power in range(7)], "format": ",d"},
    }
    y = {"field": "speedup", "type": "quantitative", "title": "speedup", "scale": {"zero": False}}
    color = {"field": "costs", "type": "nominal", "sort": series, "title": None, "legend": {"orient": "top-right"}}
    tooltip = [
        {"field": "costs", "type": "nominal", "title": "costs"},
        {"field": "users", "type": "quantitative", "title": "users", "format": ","},
        {"field": "speedup", "type": "quantitative", "title": "speedup", "format": ".2f"},
    ]
    one = {"values": [{"speedup": 1}]}
    here = {"values": [{"users": batch}]}
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v6.json",
        "description": (
            "Speedup of speculative decoding over plain decoding against users, at the ceiling and at the"
            f" expected costs; the dotted rule marks {batch:,} users, the dashed line no gain."
        ),
        "height": 240,
        "layer": [
            {
                "data": one,
                "mark": {"type": "rule", "strokeDash": [4, 4], "color": "#888888"},
                "encoding": {"y": {"field": "speedup", "type": "quantitative"}},
            },
            {
                "data": here,
                "mark": {"type": "rule", "strokeDash": [1, 3], "color": "#888888"},
                "encoding": {"x": x},
            },
            {
                "data": {"values": rows},
                "mark": {"type": "line", "point": True},
                "encoding": {
                    "x": x,
                    "y": y,
                    "color": color,
                    "strokeDash": {"field": "costs", "type": "nominal", "sort": series, "legend": None},
                    "tooltip": tooltip,
                },
            },
        ],
    }


def _refused(params: dict[str, Any], verdict: str, why: str) -> dict[str, Any]:
    """Inputs no round can be priced for: every figure a dash, the reason in words, no chart lines."""
    answer = {name: NOT_APPLICABLE for name in (o.name for o in FORM.outputs) if name != "chart"}
    return {
        **answer,
        "params": params,
        "fits": False,
        "verdict": verdict,
        "summary": f"{verdict}. {why}",
        "explain": why,
        "chart": _chart({}, {}, params["batch"]),
    }


@FORM.view
def view(
    gpu: str,
    model: str,
    draft: str,
    draft_cost: float,
    alpha: float,
    gamma: int,
    batch: int,
    context: int,
    gpus: int,
) -> dict[str, Any]:
    """Everything the calculator shows for one set of inputs: both cost models side by side.

    The form has checked every input's range; a draft model whose vocabulary differs from
    the target's, a draft head made for another target, a layout that does not split or a
    batch that does not fit is refused in words.
    """
    specs = FORM.specs()
    gpu_spec, target = specs.gpu(gpu), specs.model(model)
    params = dict(
        gpu=gpu,
        model=model,
        draft=draft,
        draft_cost=draft_cost,
        alpha=alpha,
        gamma=gamma,
        batch=batch,
        context=context,
        gpus=gpus,
    )
    layout = gpu_count_problem(target, gpus)
    if layout:
        return _refused(params, f"{target.name} does not split over {gpus:,} GPUs", f"{layout}.")
    workload = Workload(target, "bf16", batch=batch, context=context)
    # Resolved once: every pass would otherwise resolve the "auto" math precision again.
    hardware = resolved(Hardware(gpu_spec, gpus), workload)
    memory = memory_use(hardware, workload)
    if not memory.fits:
        return _refused(
            params,
            "Does not fit",
            f"{batch:,} {'user' if batch == 1 else 'users'} of {target.name} at {context:,} tokens of context need"
            " more than the"
            f" {labelled(BUDGET, memory.usable_bytes)} on {gpus:,} × {gpu_spec.name}: try fewer users, a shorter"
            " context or more GPUs.",
        )
    drafter: dict[str, Any] = {"draft_cost": draft_cost} if draft == GIVEN_COST else {"draft": specs.draft(draft)}
    calibration = load_calibration()  # read once: each call reads the file again
    # The costs and the band together: widened, and flagged, on a GPU or math the fit has no rows for.
    ground = expected_costs(hardware, workload, calibration)
    expected_hardware = replace(hardware, costs=ground.costs)
    # One Rounds per cost model: the chart's batches, the break-even search and the chosen batch
    # share their passes (the search's doubling meets the chart's batches).
    try:
        at_ceiling = Rounds(hardware, workload, gamma, **drafter)
    except SpecError as error:
        return _refused(params, "This drafter cannot draft for this model", f"{error.message}; {error.hint}.")
    at_expected = Rounds(expected_hardware, workload, gamma, **drafter)
    ceiling, expected = at_ceiling.at(batch), at_expected.at(batch)
    # The most users whose caches fit at this context (None at context 0: no cache to hold).
    most = memory_use(hardware, replace(workload, batch=1)).max_batch
    chart = _chart(
        *({b: rounds.at(b).speedup(alpha) for b in CHART_BATCHES} for rounds in (at_ceiling, at_expected)),
        batch,
    )
    # The ceiling's break-even only: the expected curve's crossing is on the chart, and a second
    # search would add to the calculator's time per keystroke.
    even = _break_even(at_ceiling, alpha, most)
    return _answer(params, (ceiling, expected), (even, most), chart, ground)


def _answer(
    params: dict[str, Any],
    rounds: tuple[Round, Round],
    evens: tuple[float | None, int | None],
    chart: dict,
    ground: GroundedCosts,
) -> dict[str, Any]:
    """The answer's words and figures from the two rounds (ceiling, expected), the ceiling's
    break-even batch, the most users that fit, and the grounded costs whose band on time per token
    (widened where unfitted) the expected figure carries."""
    alpha, batch = params["alpha"], params["batch"]
    ceiling, expected = rounds
    even, most = evens
    tau = ceiling.tokens_per_step(alpha)
    speedup, speedup_expected = ceiling.speedup(alpha), expected.speedup(alpha)
    per_user = ceiling.tokens_per_s_per_user(alpha)
    plain_ceiling = ceiling.baseline_tokens_per_s_per_user
    per_user_expected = expected.tokens_per_s_per_user(alpha)
    # The fit's band is on time per token (its 80% band of measured ÷ expected), so tokens/s is its inverse.
    low, high = ground.calibration.band["tpot_mean_s"]
    above = per_user > plain_ceiling
    flag = (
        f" (speculative: {per_user / plain_ceiling:.2f}× the plain ceiling)"
        if above
        else " (at or below the plain ceiling)"
    )
    notes = " ".join(ceiling.notes)
    pays = speedup > 1
    verdict = f"{_times(speedup)} at the ceiling, {_times(speedup_expected)} expected"
    explain = (
        f"A round drafts {params['gamma']} tokens and verifies {params['gamma'] + 1} per user in one pass of"
        f" {batch * (params['gamma'] + 1):,} tokens; at α = {alpha:g} it yields τ = {tau:.2f} tokens. At the ceiling"
        f" the round takes {fmt.milliseconds(ceiling.seconds)} against {fmt.milliseconds(ceiling.baseline.seconds)}"
        f" for a plain step, so the speedup is {tau:.2f} × {fmt.milliseconds(ceiling.baseline.seconds)} ÷"
        f" {fmt.milliseconds(ceiling.seconds)} = {_times(speedup)}. The expected figures use the costs fitted to"
        " published runs without speculation; their band is that fit's 80% band, and no"
        " speculative run was part of the fit." + (f" Expected band: {ground.flag}." if ground.widened else "")
    )
    if above:
        explain += (
            f" With speculation one user gets {fmt.rate(per_user)} tokens/s, above the plain ceiling of"
            f" {fmt.rate(plain_ceiling)}: that ceiling bounds one token per read of the weights, and a round"
            " gets several tokens from one read. The figure is a speculative ceiling, not a plain one."
        )
    if notes:
        explain += f" {notes}."
    if params["draft"] != GIVEN_COST:
        explain += " The draft cost field is not used: the draft model's own decode step sets the cost."
    return {
        "params": params,
        "fits": pays,
        "verdict": ("Speculation pays: " if pays else "Speculation slows decoding: ") + verdict,
        "summary": f"τ = {tau:.2f} tokens per step; {verdict}; {fmt.rate(per_user)} tokens/s per user at the ceiling"
        + (" (speculative, above the plain ceiling)." if above else "."),
        "explain": explain,
        "tau": f"{tau:.2f}",
        "speedup": f"{_times(speedup)} ceiling · {_times(speedup_expected)} expected",
        "per_user": f"{fmt.rate(per_user)}{flag}",
        "expected": f"{fmt.rate(per_user_expected)} (band {fmt.rate(per_user_expected / high)} to"
        f" {fmt.rate(per_user_expected / low)}, fitted without speculation"
        + (f"; {UNFITTED_FLAG})" if ground.widened else ")"),
        "baseline": f"{fmt.rate(plain_ceiling)} ceiling · {fmt.rate(expected.baseline_tokens_per_s_per_user)} expected",
        "draft_share": f"{ceiling.draft_cost:.3f} ceiling · {expected.draft_cost:.3f} expected",
        "verification": f"{fmt.milliseconds(ceiling.verification.seconds)}, {ceiling.verification.bound}-bound",
        "break_even": _users(even, most) + "; the expected curve's crossing is on the chart",
        "chart": chart,
    }
