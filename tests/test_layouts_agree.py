"""One rule for which layouts the course allows (issue 40): chapter 1's table and calculator and
chapter 6's "Deploy it" calculator accept the same tensor-parallel groups and give them the same
ceiling. Before, chapter 1 ran Llama 3.1 405B in bf16 on 16-way TP while chapter 6 refused that
group for spanning two NVLink domains."""

from __future__ import annotations

import pytest

from roofline import Hardware, Workload, builtin_specs
from roofline.deployment import Split, check_split, domain_note
from roofline.sweep import decode_prefill_rows
from support import ROOT, view_in

SPECS = builtin_specs()
GPU = "h100-sxm"


def _chapter_one_rows():
    """The rows of chapter 1's H100 table: each model and precision on the GPUs it needs."""
    from sitegen.pages import find

    page = find(ROOT / "docs", "prefill-vs-decode").module()
    return list(
        decode_prefill_rows(SPECS, GPU, ["llama-3.1-405b"], precisions=page.PRECISIONS, prompt=page.PROMPT_TOKENS)
    )


def test_every_layout_of_chapter_one_s_table_is_one_chapter_six_allows() -> None:
    rows = _chapter_one_rows()
    assert any(row.gpus == 16 for row in rows), "chapter 1's table no longer runs the 405B on 16 GPUs"
    for row in rows:
        check_split(Hardware(SPECS.gpu(GPU)), row.estimate.workload.model, Split(row.gpus))  # raises if refused


@pytest.mark.slow
def test_both_calculators_answer_405b_on_16_gpus_with_the_same_ceiling_and_the_same_note() -> None:
    """The reader sees a figure, not a refusal, in both, and the one sentence about crossing nodes."""
    deploy = view_in(
        ROOT,
        "parallelism",
        "deploy",
        {
            "model": "llama-3.1-405b",
            "gpu": GPU,
            "split": "tp",
            "gpus": 16,
            "pp_stages": 2,
            "microbatches": 4,
            "weights": "bf16",
            "batch": 1,
            "context": 0,
            "prompt": 0,
            "latency": "smallest",
        },
    )
    speed = view_in(
        ROOT,
        "prefill-vs-decode",
        "decode_speed",
        {"gpu": GPU, "model": "llama-3.1-405b", "precision": "bf16", "gpus": 16, "users": 1, "context": 0},
    )
    assert deploy["fits"] and speed["fits"], (deploy["verdict"], speed["verdict"])
    row = next(row for row in _chapter_one_rows() if row.gpus == 16)
    from roofline import formatting as fmt

    table = fmt.rate(row.estimate.decode_tokens_per_s_per_user)
    assert deploy["per_user"].split(" · ")[0] == table == speed["per_user"]
    note = domain_note(Hardware(SPECS.gpu(GPU)), 16)
    assert note and note in deploy["explain"] and note in speed["explain"]


def test_within_one_domain_no_note_and_a_bad_degree_is_still_refused() -> None:
    hardware = Hardware(SPECS.gpu(GPU))
    assert domain_note(hardware, 8) is None
    model = Workload(SPECS.model("llama-3.1-70b")).model
    with pytest.raises(Exception, match="nearest usable tensor-parallel degrees are 4 and 8"):
        check_split(hardware, model, Split(6))
