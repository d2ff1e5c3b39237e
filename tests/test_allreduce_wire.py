"""One all-reduce formula past a scale-up domain (performance.allreduce_wire): the ceiling charges the
cheaper of a flat ring over the scale-out network and a two-level all-reduce that sends only a 1/D
share across it, and tensor parallelism and tpxep's attention groups both use it."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from roofline import builtin_specs
from roofline.cli import main
from roofline.epdeploy import ExpertLayout, expert_costs
from roofline.performance import FLAT_RING_OVER_NETWORK, RING, TWO_LEVEL, Hardware, Workload, allreduce_wire

SPECS = builtin_specs()
H100 = SPECS.gpu("h100-sxm")  # 8 GPUs a domain at 450 GB/s, 50 GB/s a GPU over the network


def test_inside_one_domain_it_is_the_ring() -> None:
    per_byte, name = allreduce_wire(H100.interconnect, 8)
    assert name == RING
    assert per_byte == pytest.approx(2 * 7 / 8 / 450e9)


def test_two_nodes_charge_the_two_level_bound_not_a_flat_ring() -> None:
    """16 H100s: a flat ring over InfiniBand costs 2 * 15/16 / 50 GB/s a byte; reducing inside each
    node first costs max(2 * 7/8 / 450 GB/s, 2 * 1/2 / 8 / 50 GB/s), 9.6 times less."""
    per_byte, name = allreduce_wire(H100.interconnect, 16)
    flat = 2 * 15 / 16 / 50e9
    two_level = max(2 * 7 / 8 / 450e9, 2 * 1 / 2 / 8 / 50e9)
    assert name == TWO_LEVEL
    assert per_byte == pytest.approx(two_level)
    assert per_byte < flat / 9


def test_a_slow_scale_up_link_keeps_the_flat_ring() -> None:
    """Where the domain's own link is slower than the network (PCIe at 32 GB/s beside 50 GB/s NICs),
    reducing inside the node first costs more, and the flat ring is the cheaper one charged."""
    slow = replace(H100.interconnect, link_bytes_per_s=32e9)
    per_byte, name = allreduce_wire(slow, 16)
    assert name == FLAT_RING_OVER_NETWORK
    assert per_byte == pytest.approx(2 * 15 / 16 / 50e9)


def test_tensor_parallel_and_tpxep_groups_share_the_formula(capsys: pytest.CaptureFixture[str]) -> None:
    """A TP16 estimate and a tpxep group of 16 name the same accounting and charge the same seconds a byte."""
    work = Workload(SPECS.model("deepseek-v3"), "fp8", "bf16", 32, 1024)
    costs = expert_costs(Hardware(H100, 1, "auto"), work, ExpertLayout(32, attention_tp=16))
    message = 2 * 7168  # one token's hidden vector in bf16
    assert costs.allreduce_s_per_token == pytest.approx(message * allreduce_wire(H100.interconnect, 16)[0])
    common = ("--gpu", "h100-sxm", "--model", "deepseek-v3", "--precision", "fp8", "--batch", "32", "--json")
    assert main(["estimate", *common, "--gpus", "16"]) == 0
    tp = json.loads(capsys.readouterr().out)
    assert main(["estimate", *common, "--gpus", "32", "--parallel", "tpxep", "--tp", "16"]) == 0
    tpxep = json.loads(capsys.readouterr().out)
    assert tp["allreduce_accounting"] == tpxep["allreduce_accounting"] == TWO_LEVEL
