"""Acceptance under sampling (``roofline.specsampling``): α = 1 − TV(p, q), and the output is p."""

from __future__ import annotations

import random

import pytest

from roofline.errors import SpecError
from roofline.specsampling import (
    acceptance_at_temperature,
    acceptance_rate,
    output_distribution,
    softmax,
    total_variation,
)


def _random_distribution(rng: random.Random, size: int) -> list[float]:
    weights = [rng.random() ** 3 for _ in range(size)]
    total = sum(weights)
    return [w / total for w in weights]


def test_acceptance_is_one_minus_the_total_variation_distance() -> None:
    rng = random.Random(7)
    for _ in range(200):
        p, q = _random_distribution(rng, 6), _random_distribution(rng, 6)
        assert acceptance_rate(p, q) == pytest.approx(1 - total_variation(p, q), abs=1e-12)
        assert acceptance_rate(p, q) == pytest.approx(sum(min(a, b) for a, b in zip(p, q, strict=True)))


def test_speculative_sampling_emits_the_targets_distribution_whatever_the_draft() -> None:
    rng = random.Random(11)
    for _ in range(200):
        p, q = _random_distribution(rng, 5), _random_distribution(rng, 5)
        assert output_distribution(p, q) == pytest.approx(p, abs=1e-12)
    # A draft that puts no mass where the target does: nothing is accepted, the residual is p itself.
    assert acceptance_rate([0.5, 0.5, 0.0], [0.0, 0.0, 1.0]) == 0
    assert output_distribution([0.5, 0.5, 0.0], [0.0, 0.0, 1.0]) == pytest.approx([0.5, 0.5, 0.0])


def test_greedy_acceptance_is_all_or_nothing() -> None:
    assert acceptance_at_temperature([3, 1, 0], [2, 1.5, 0], 0) == 1  # same top token
    assert acceptance_at_temperature([3, 1, 0], [1, 2, 0], 0) == 0  # different top tokens
    assert softmax([1, 1, 0], 0) == [0.5, 0.5, 0.0]  # a tie splits the mass


def test_identical_models_are_always_accepted() -> None:
    for temperature in (0, 0.3, 1, 5):
        assert acceptance_at_temperature([2, 1, 0.5], [2, 1, 0.5], temperature) == pytest.approx(1)


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: acceptance_rate([0.5, 0.6], [0.5, 0.5]), "p"),
        (lambda: acceptance_rate([0.5, 0.5], [0.5, 0.5, 0.0]), "q"),
        (lambda: total_variation([1.0], [-0.5, 1.5]), "q"),
        (lambda: softmax([1.0, 2.0], -1), "temperature"),
        (lambda: softmax([], 1), "logits"),
    ],
)
def test_bad_input_is_one_line_naming_its_field(call, field) -> None:
    with pytest.raises(SpecError) as error:
        call()
    assert field in str(error.value) and "\n" not in str(error.value)
