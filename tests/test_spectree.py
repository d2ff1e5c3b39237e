"""Tree verification (``roofline.spectree``): a round's cost follows the tokens verified, not the depth."""

from __future__ import annotations

import pytest

from roofline import Hardware, Workload, builtin_specs, crossover_batch
from roofline.errors import SpecError
from roofline.spectree import TreeRounds, TreeShape, tree_break_even
from roofline.speculative import break_even_batch, speculation_round, tokens_per_step


@pytest.fixture(scope="module")
def deployment():
    specs = builtin_specs()
    return Hardware(specs.gpu("h100-sxm")), Workload(specs.model("llama-3.1-8b"), "bf16"), specs


def test_a_chain_shape_is_the_chain_the_speculative_module_prices(deployment) -> None:
    hardware, workload, _ = deployment
    tau = tokens_per_step(0.8, 4)
    chain = TreeShape(4, 1, 5)
    assert chain.is_chain
    free = TreeRounds(hardware, workload, chain)
    assert free.break_even(tau) == pytest.approx(break_even_batch(hardware, workload, 0.8, 4), rel=1e-3)
    for batch in (1, 64, 512):
        assert free.at(batch).speedup(tau) == pytest.approx(
            speculation_round(hardware, workload, 4, batch).speedup(0.8)
        )


def test_the_break_even_batch_scales_with_one_over_the_tokens_verified(deployment) -> None:
    """Past the critical batch a pass costs in proportion to its tokens: B_even ≈ τ / N · B*."""
    hardware, workload, _ = deployment
    critical = crossover_batch(hardware, workload)
    tau = 3.0
    for verified in (8, 16, 32, 64):
        even = tree_break_even(hardware, workload, TreeShape(8, 8, verified), tau)
        assert even == pytest.approx(tau / verified * critical, rel=0.05)
    # Depth alone does not move a free draft's verification: same N, depths 3 and 8.
    shallow = tree_break_even(hardware, workload, TreeShape(3, 8, 32), tau)
    deep = tree_break_even(hardware, workload, TreeShape(8, 8, 32), tau)
    assert shallow == pytest.approx(deep, rel=1e-6)


def test_a_wide_tree_drafts_more_than_a_chain_with_a_head(deployment) -> None:
    """Past the head's own critical batch, extending top-k branches per user costs top-k times the tokens."""
    hardware, workload, specs = deployment
    head = specs.draft("eagle3-llama-3.1-8b")
    chain = TreeRounds(hardware, workload, TreeShape(5, 1, 6), draft=head).at(128)
    tree = TreeRounds(hardware, workload, TreeShape(5, 8, 32), draft=head).at(128)
    assert tree.drafting_s > chain.drafting_s and tree.verification.seconds > chain.verification.seconds


@pytest.mark.parametrize(
    ("shape", "field"),
    [((0, 1, 2), "depth"), ((3, 1.5, 4), "topk"), ((2, 2, 99), "verified"), ((True, 1, 2), "depth")],
)
def test_a_bad_shape_is_one_line_naming_its_field(shape, field) -> None:
    with pytest.raises(SpecError) as error:
        TreeShape(*shape)
    assert field in str(error.value) and "\n" not in str(error.value)


def test_a_tau_the_tree_cannot_yield_is_refused(deployment) -> None:
    hardware, workload, _ = deployment
    with pytest.raises(SpecError, match="tokens_per_step"):
        TreeRounds(hardware, workload, TreeShape(3, 4, 10)).break_even(4.5)  # depth 3 yields at most 4
