"""Mixture-of-experts formulas (roofline.moe) and the expert-parallel layout (estimate --parallel ep).

Worked examples come from published configs and kernels: DeepSeek-V3 has 256 routed experts,
top-8, one shared expert and hidden size 7,168 (its config.json, roofline/data/models.toml);
DeepEP sends the DeepSeek-V3 setting at fp8 with one fp32 scale per 128 channels and combines
at bf16 (deepseek-ai/DeepEP docs/legacy.md and its low-latency kernels' kNumPerChannels = 128).
"""

from __future__ import annotations

import json

import pytest

from roofline import moe
from roofline.cli import main
from roofline.errors import SpecError
from roofline.loader import load_specs


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def ep_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    code, out, err = run_cli(capsys, "estimate", "--parallel", "ep", *argv, "--json")
    assert code == 0, err
    return json.loads(out)


DSV3 = ("--gpu", "h100-sxm", "--model", "deepseek-v3", "--precision", "fp8")


# -- The formulas, against hand-worked DeepSeek-V3 numbers ------------------------------------------


def test_experts_touched_is_k_at_one_token_and_all_at_a_large_batch() -> None:
    """One token runs its 8 routed experts and the shared one; 64 tokens run
    256 * (1 - (31/32)**64) = 222.4 routed (the research brief's Monte Carlo gave 222.5)."""
    assert moe.experts_touched(256, 8, 1, shared=1) == pytest.approx(9.0)
    assert moe.routed_experts_touched(256, 8, 64) == pytest.approx(256 * (1 - (31 / 32) ** 64))
    assert moe.routed_experts_touched(256, 8, 64) == pytest.approx(222.4, abs=0.05)
    assert moe.experts_touched(256, 8, 64, shared=1) == pytest.approx(223.4, abs=0.05)
    # Mixtral (8 experts, top-2): 16 tokens touch 99% of them.
    assert moe.routed_experts_touched(8, 2, 16) / 8 == pytest.approx(1 - 0.75**16)
    assert moe.experts_touched(256, 8, 0, shared=1) == 0.0


def test_tokens_per_expert_and_the_batch_an_expert_needs() -> None:
    """B k / E: 256 tokens give each DeepSeek-V3 expert 8 rows; an expert GEMM reaches a
    critical batch of 295 at 295 * 256 / 8 = 9,440 tokens, 32 times a dense model's."""
    assert moe.tokens_per_expert(256, 8, 256) == 8.0
    assert moe.expert_critical_batch(295.0, 256, 8) == pytest.approx(9440.0)
    assert moe.expert_critical_batch(295.0, 8, 2) == pytest.approx(1180.0)  # Mixtral: E/k = 4


def test_alltoall_bytes_per_token_is_deepseeks_dispatch_and_combine() -> None:
    """8 copies of 7,168 fp8 values plus 56 fp32 scales (7,392 B) out, 8 bf16 copies
    (14,336 B) back: 59,136 + 114,688 = 173,824 bytes a token a layer."""
    assert moe.alltoall_bytes_per_token(7168, 8) == pytest.approx(8 * 7392 + 8 * 14336)
    assert moe.alltoall_bytes_per_token(7168, 8, "bf16", "bf16") == pytest.approx(8 * 7168 * 4)


def test_a_token_is_charged_once_per_destination_node_not_per_expert_copy() -> None:
    """DeepSeek-V3 (256 experts, top-8) on EP32 of 8-GPU nodes: a token reaches each of the 3 other
    nodes with chance 1 - C(192, 8)/C(256, 8) (DeepEP's expected scale-out ranks, get_expected_topk),
    so 2.71 network copies where charging every off-node expert copy counted 8 * 24/32 = 6."""
    miss = 1.0
    for i in range(8):
        miss *= (192 - i) / (256 - i)
    remote, _ = moe.destinations_per_token(256, 8, 32, 8)
    assert remote == pytest.approx(3 * (1 - miss))
    assert remote == pytest.approx(2.71, abs=0.005)
    assert remote < 8 * (32 - 8) / 32
    # Inside one node: one copy per other GPU it reaches, fewer than the 7 off-GPU copies of 8.
    assert moe.destinations_per_token(256, 8, 8, 8) == (0.0, pytest.approx(7 * moe.hit_probability(256, 32, 8)))
    assert moe.destinations_per_token(256, 8, 8, 8)[1] < 7


def test_the_node_limit_caps_the_nodes_a_token_reaches() -> None:
    """EP144 (18 nodes of 8): without a limit a token reaches 6.3 other nodes; DeepSeek-V3's
    node_limit of 4 (topk_group) leaves at most 4, and a pick of 4 nodes out of 18 that holds the
    token's own node with chance 4/18."""
    free, _ = moe.destinations_per_token(256, 8, 144, 8)
    limited, _ = moe.destinations_per_token(256, 8, 144, 8, node_limit=4)
    assert free == pytest.approx(6.31, abs=0.005)
    assert limited < 4 * 17 / 18 < free
    assert min(8, 4) >= limited


def test_deepseek_v3_declares_its_node_limit() -> None:
    """models.toml gives DeepSeek-V3's topk_group as node_limit 4; a model without one has 0."""
    specs = load_specs()
    assert specs.model("deepseek-v3").moe.node_limit == 4
    assert specs.model("mixtral-8x7b").moe.node_limit == 0


# -- The spec data: the DeepEP preset ----------------------------------------------------------------


def test_h100_alltoall_ceiling_takes_the_best_published_figures() -> None:
    """DeepEP V1's normal kernels reach 158 GB/s over NVLink (below the H100's own 450) and 58 GB/s
    over RDMA; V2 reaches 90 GB/s over RDMA at EP 8 x 2 (above the 50 GB/s NIC: its figure counts
    traffic within the node) and publishes no Hopper NVLink figure. The ceiling is 450 and 90."""
    link = load_specs().gpu("h100-sxm").interconnect
    v1, v2 = link.alltoall["deepep_v1_normal"], link.alltoall["deepep_v2"]
    assert (v1.nvlink_bytes_per_s, v1.rdma_bytes_per_s, v1.latency_s) == (158e9, 58e9, 0.0)
    assert (v2.nvlink_bytes_per_s, v2.rdma_bytes_per_s) == (None, 90e9)
    assert "DeepEP" in v1.source and "EP 8 x 2" in v2.source
    best = link.alltoall_ceiling()
    assert (best.nvlink_bytes_per_s, best.rdma_bytes_per_s, best.latency_s) == (450e9, 90e9, 0.0)


def test_bad_alltoall_preset_names_file_entry_and_field(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (
        '[gpu."my-gpu"]\nname = "Mine"\nmemory_bytes = 80e9\nbandwidth_bytes_per_s = 3e12\nsource = "https://x"\n'
        '[gpu."my-gpu".dense_flops_per_s]\nbf16 = 1e15\n[gpu."my-gpu".interconnect]\nscale_up = "NVLink"\n'
        "domain_gpus = 8\nlink_bytes_per_s = 450e9\nscale_out_bytes_per_s = 50e9\n"
        'allreduce_latency_s = { nccl = { 8 = 19e-6 } }\nsource = "https://x"\n'
        'alltoall = { deepep = { nvlink_bytes_per_s = 158e9, rdma_bytes_per_s = 58e9, latncy_s = 0, source = "x" } }\n'
    )
    path = tmp_path / "mine.toml"
    path.write_text(text)
    code, _, err = run_cli(capsys, "validate", str(path))
    assert code != 0
    line = err.strip()
    assert "\n" not in line
    assert "mine.toml" in line and '[gpu."my-gpu"]' in line
    assert "interconnect.alltoall.deepep.latncy_s" in line and "latency_s" in line


# -- estimate --parallel ep ----------------------------------------------------------------------


def test_ep_json_carries_the_moe_keys_worked_by_hand(capsys: pytest.CaptureFixture[str]) -> None:
    """DeepSeek-V3 at fp8 on 16 H100s, 256 users: 8 tokens per expert, 256*(1-(31/32)**256)+1
    experts a layer, and each GPU sends each of its 16 users' tokens once to every destination
    its 8 experts reach (21,728 B a destination, 58 layers): the other node, reached with chance
    1 - C(128, 8)/C(256, 8), over RDMA at 90 GB/s, and each of the 7 other GPUs of its node,
    reached with chance 1 - C(240, 8)/C(256, 8), over NVLink at 450 GB/s. Charging every expert
    copy instead (the old accounting) sent 16 * 173,824 * 58 * 15/16 bytes, nearly twice as many."""
    figures = ep_json(capsys, *DSV3, "--gpus", "16", "--batch", "256", "--context", "2048")
    assert figures["parallel"] == "ep" and figures["ep"] == 16
    assert figures["tokens_per_expert"] == 8.0
    assert figures["experts_touched_per_step"] == pytest.approx(256 * (1 - (31 / 32) ** 256) + 1)
    per_destination = 16 * 173824 / 8 * 58

    def reached(others: int) -> float:
        miss = 1.0
        for i in range(8):
            miss *= (256 - others - i) / (256 - i)
        return 1 - miss

    rdma = per_destination * reached(128)
    nvlink = per_destination * 7 * reached(16)
    assert figures["alltoall_rdma_bytes_per_step"] == pytest.approx(rdma)
    assert figures["alltoall_bytes_per_step"] == pytest.approx(rdma + nvlink)
    assert figures["alltoall_bytes_per_step"] < 0.6 * 16 * 173824 * 58 * 15 / 16
    assert figures["alltoall_s"] == pytest.approx(max(rdma / 90e9, nvlink / 450e9))
    # Weights one GPU reads: its copy of the non-expert weights plus its 16 experts of 58 layers.
    expert = 3 * 7168 * 2048 * 58  # one expert of every MoE layer, fp8 bytes
    assert figures["moe_weight_bytes_read_per_step"] > 16 * expert * (1 - (31 / 32) ** 256)
    assert figures["moe_weight_bytes_read_per_step"] < 16 * expert + 25e9
    assert figures["decode_step_s"] == pytest.approx(1 / figures["decode_tokens_per_s_per_user"])
    assert figures["allreduces_per_step"] == 0 and figures["kv_copies"] == 1.0


def test_ep_carries_every_key_the_tensor_parallel_layout_has(capsys: pytest.CaptureFixture[str]) -> None:
    """A script written for --parallel tp reads ep: every key but the TP-only comparisons."""
    from roofline.cli import TP_ONLY_KEYS

    base = (*DSV3, "--gpus", "16", "--batch", "64")
    code, out, err = run_cli(capsys, "estimate", *base, "--json")
    assert code == 0, err
    tp = json.loads(out)
    ep = ep_json(capsys, *base)
    assert set(tp) - TP_ONLY_KEYS <= set(ep)
    for key in ("experts_touched_per_step", "tokens_per_expert", "alltoall_bytes_per_step", "alltoall_s"):
        assert key in ep and key not in tp
    assert "moe_weight_bytes_read_per_step" in ep


def test_imbalance_slows_the_busiest_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    """TensorRT-LLM's EP32 DeepSeek-R1 without load balancing (busiest rank 2.564 x the mean)
    sends 2.564 times the all-to-all bytes and computes more on the busiest GPU."""
    base = (*DSV3, "--gpus", "32", "--batch", "1024", "--context", "1024")
    even = ep_json(capsys, *base)
    skewed = ep_json(capsys, *base, "--expert-imbalance", "2.564")
    assert skewed["alltoall_bytes_per_step"] == pytest.approx(2.564 * even["alltoall_bytes_per_step"])
    assert skewed["decode_compute_s"] > even["decode_compute_s"]
    assert skewed["decode_step_s"] >= even["decode_step_s"]


def test_ep_text_report_names_the_layout(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(
        capsys, "estimate", "--parallel", "ep", *DSV3, "--gpus", "16", "--batch", "256", "--prompt", "1000"
    )
    assert code == 0, err
    assert "EP16 (data-parallel attention)" in out
    assert "tokens per expert         8.00" in out
    assert "all-to-all per GPU" in out and "RDMA" in out
    assert "prefill (1,000 tokens)" in out


def test_held_out_single_node_has_no_rdma(capsys: pytest.CaptureFixture[str]) -> None:
    """Held out: Mixtral 8x7B (8 experts, top-2, hidden 4,096; its config.json) on 8 H100s, 64
    users: every copy rides NVLink, 64 * 2 / 8 = 16 tokens per expert, and each GPU sends its 8
    users' copies, 8 * 2 * 4,096 * (1.03125 + 2) B * 32 layers * 7/8, at 450 GB/s."""
    figures = ep_json(capsys, "--gpu", "h100-sxm", "--model", "mixtral-8x7b", "--gpus", "8", "--batch", "64")
    assert figures["tokens_per_expert"] == 16.0
    assert figures["alltoall_rdma_bytes_per_step"] == 0.0
    sent = 8 * 2 * 4096 * (1 + 4 / 128 + 2) * 32 * 7 / 8
    assert figures["alltoall_nvlink_bytes_per_step"] == pytest.approx(sent)
    assert figures["alltoall_s"] == pytest.approx(sent / 450e9)
    assert figures["experts_touched_per_step"] == pytest.approx(8 * (1 - 0.75**64))
    # Each GPU holds one expert: the busiest reads at most one expert of every layer.
    assert figures["routed_experts_per_gpu"] <= 1.0


# -- Bad input: one line each ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (("--parallel", "ep", *DSV3, "--gpus", "6"), ("--ep", "256 experts do not split evenly over 6", "divisor")),
        (("--parallel", "ep", *DSV3, "--gpus", "512"), ("--ep", "more than the model's 256 experts", "at most 256")),
        (
            ("--parallel", "ep", "--gpu", "h100-sxm", "--model", "llama-3.1-70b", "--gpus", "8"),
            ("--parallel", "dense model", "--parallel tp"),
        ),
        (("--parallel", "ep", *DSV3, "--gpus", "8", "--expert-imbalance", "0.5"), ("--expert-imbalance", "at least 1")),
        ((*DSV3, "--gpus", "8", "--ep", "8"), ("--ep", "add --parallel ep")),
        (("--parallel", "ep", *DSV3, "--gpus", "8", "--ep", "4"), ("--ep 4", "--gpus 8")),
        (("--parallel", "ep", *DSV3, "--gpus", "8", "--microbatches", "2"), ("--microbatches", "leave it out")),
        (("--parallel", "ep", *DSV3, "--gpus", "8", "--shared-prefix", "64"), ("--shared-prefix", "leave it out")),
    ],
)
def test_bad_expert_input_is_one_line(capsys: pytest.CaptureFixture[str], argv: tuple, names: tuple) -> None:
    code, out, err = run_cli(capsys, "estimate", *argv)
    assert code != 0 and out == ""
    line = err.strip()
    assert "\n" not in line and "Traceback" not in line
    for name in names:
        assert name in line, line


def test_top_k_above_the_expert_count_names_the_field(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (
        '[model."tiny-moe"]\nname = "Tiny"\nlayers = 2\nhidden_size = 64\nattention_heads = 4\nkv_heads = 4\n'
        'head_dim = 16\nffn_size = 128\nvocab_size = 100\ntied_embeddings = false\nsource = "https://x"\n'
        '[model."tiny-moe".moe]\nexperts = 4\nexperts_per_token = 8\nexpert_ffn_size = 32\nshared_experts = 0\n'
        "dense_layers = 0\n"
    )
    path = tmp_path / "tiny.toml"
    path.write_text(text)
    code, _, err = run_cli(capsys, "validate", str(path))
    line = err.strip()
    assert code != 0 and "\n" not in line
    assert '[model."tiny-moe"]' in line and "experts_per_token" in line and "must not exceed experts (4)" in line


def test_check_imbalance_rejects_non_numbers() -> None:
    with pytest.raises(SpecError, match="at least 1"):
        moe.check_imbalance(float("nan"))
    assert moe.check_imbalance(1) == 1.0


# -- The published row that beat the tensor-parallel ceiling ----------------------------------------

#: SGLang serving DeepSeek-R1-0528 on 16 H100s over InfiniBand, 8,192 prompt tokens, 128 out,
#: concurrency 1: time to first token 263.9 ms (tenstorrent/tt-inference-server issue #356,
#: "Performance Benchmark Sweeps for DeepSeek-R1-0528 on 16 H100 (SGLANG + INFINIBAND)",
#: 2025-07-09, https://github.com/tenstorrent/tt-inference-server/issues/356). The excerpt
#: does not state the engine's layout or weight format; DeepSeek's release is fp8.
SGLANG_16XH100_TTFT_S = 0.2639


def test_sglang_16xh100_ttft_sits_under_both_ceilings(capsys: pytest.CaptureFixture[str]) -> None:
    """Tensor parallelism over two nodes once priced every all-reduce as a flat ring over
    InfiniBand: a 562 ms ceiling, slower than the measured 263.9 ms, which a ceiling may never be.
    Charged the cheaper two-level all-reduce (1/8 of each message across the network) it is under
    the measurement, as is the ceiling spread over 16 expert-parallel ranks."""
    base = (*DSV3, "--gpus", "16", "--batch", "1", "--prompt", "8192")
    code, out, err = run_cli(capsys, "estimate", *base, "--json")
    assert code == 0, err
    tensor_parallel = json.loads(out)
    assert 0 < tensor_parallel["prefill_s"] < SGLANG_16XH100_TTFT_S
    assert tensor_parallel["allreduce_accounting"].startswith("two-level")
    assert "two-level" in tensor_parallel["accounting"]["communication"]
    expert_parallel = ep_json(capsys, *base)["prefill_s"]
    assert 0 < expert_parallel < SGLANG_16XH100_TTFT_S
    # The bound is the prompt's FLOPs over 16 GPUs or its all-to-all, whichever is longer.
    assert expert_parallel >= 2 * 37e9 * 8192 / (16 * 1978.9e12)


#: SGLang's large-scale EP decode on 9 nodes of 8 H100s (72 GPUs), 256 sequences a GPU, KV cache
#: length 2,000: 22,282 output tokens/s per node ("Deploying DeepSeek with PD Disaggregation and
#: Large-scale Expert Parallelism on 96 H100 GPUs", decode table, https://github.com/lm-sys/
#: lm-sys.github.io/blob/2db4e4042b31f3c3c9f4f93068ae80946d25a115/blog/2025-05-05-large-scale-ep.md).
#: 256 experts do not divide over 72 ranks; 32 redundant experts (DeepSeek's count) give 288
#: slots, 4 a GPU; the blog's text does not give its redundant count.
SGLANG_EP72_DECODE_PER_NODE = 22_282


def test_sglang_ep72_decode_stays_below_the_ceiling(capsys: pytest.CaptureFixture[str]) -> None:
    figures = ep_json(
        capsys, *DSV3, "--gpus", "72", "--redundant-experts", "32", "--batch", str(256 * 72), "--context", "2000"
    )
    assert figures["expert_slots_per_gpu"] == 4.0 and figures["redundant_experts"] == 32
    per_node = figures["decode_tokens_per_s_total"] / 9
    assert per_node > SGLANG_EP72_DECODE_PER_NODE
    # 256 * 8 / 256 = 8 tokens per expert per GPU's worth of users: 576 over the whole group.
    assert figures["tokens_per_expert"] == pytest.approx(256 * 72 * 8 / 256)
    # Past one node a token crosses InfiniBand once per other node it reaches: of 9 nodes (28.4
    # experts each) DeepSeek-V3 routes a token to at most 4, so each other node is picked with chance
    # 4/9 and then hit unless all 8 experts miss it: not once per expert copy on 64 of the 72 ranks.
    per_node_experts = 256 / 9
    pool = 4 * per_node_experts
    miss = 1.0
    for i in range(8):
        miss *= (pool - per_node_experts - i) / (pool - i)
    remote = 8 * 4 / 9 * (1 - miss)
    assert figures["alltoall_rdma_bytes_per_step"] == pytest.approx(256 * 173824 / 8 * 58 * remote)
    assert figures["alltoall_rdma_bytes_per_step"] < 0.5 * 256 * 173824 * 58 * 64 / 72


def test_redundant_experts_must_split_evenly(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "estimate", "--parallel", "ep", *DSV3, "--gpus", "72", "--redundant-experts", "8")
    line = err.strip()
    assert code != 0 and "\n" not in line
    assert "--ep: 256 + 8 = 264 expert slots do not split evenly over 72 GPUs" in line
    code, _, err = run_cli(capsys, "estimate", "--parallel", "ep", *DSV3, "--gpus", "72")
    assert "or add --redundant-experts" in err


def test_a_preset_with_no_bandwidth_is_refused(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (
        '[gpu."my-gpu"]\nname = "Mine"\nmemory_bytes = 80e9\nbandwidth_bytes_per_s = 3e12\nsource = "https://x"\n'
        '[gpu."my-gpu".dense_flops_per_s]\nbf16 = 1e15\n[gpu."my-gpu".interconnect]\nscale_up = "NVLink"\n'
        "domain_gpus = 8\nlink_bytes_per_s = 450e9\nscale_out_bytes_per_s = 50e9\n"
        'allreduce_latency_s = { nccl = { 8 = 19e-6 } }\nsource = "https://x"\n'
        'alltoall = { deepep = { latency_s = 0, source = "x" } }\n'
    )
    path = tmp_path / "mine.toml"
    path.write_text(text)
    code, _, err = run_cli(capsys, "validate", str(path))
    line = err.strip()
    assert code != 0 and "\n" not in line
    assert "interconnect.alltoall.deepep" in line and "gives no bandwidth" in line


#: SGLang's prefill on 4 nodes of 8 H100s (EP32), 16,384 tokens a GPU: 57,674, 54,543 and 50,302
#: input tokens/s per node at 1,024-, 2,048- and 4,096-token prompts (the same blog post's prefill
#: table, lm-sys.github.io@2db4e4042b31f3c3c9f4f93068ae80946d25a115, 2025-05-05-large-scale-ep.md).
SGLANG_EP32_PREFILL_PER_NODE = {1024: 57_674, 2048: 54_543, 4096: 50_302}


@pytest.mark.parametrize(("prompt", "measured"), sorted(SGLANG_EP32_PREFILL_PER_NODE.items()))
def test_estimates_ep_prefill_is_a_batched_bound_that_sglang_stays_under(
    prompt: int, measured: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """estimate --parallel ep's prefill_s is one prompt alone, a latency: read as a throughput
    (P / prefill_s) it would sit below SGLang's measured per-node rate at 2,048-token prompts. The
    JSON says so, and prefill_tokens_per_s, the batched bound, sits above every measured rate."""
    figures = ep_json(capsys, *DSV3, "--gpus", "32", "--batch", "1", "--prompt", str(prompt))
    assert "not a throughput" in figures["prefill_basis"]
    per_node = figures["prefill_tokens_per_s"] * 8 / 32
    assert per_node > measured
    # Batched, the math and the all-to-all's bytes scale with the prompts while the weights are read once.
    assert figures["prefill_tokens_per_s"] >= prompt / figures["prefill_s"]
    if prompt == 2048:
        assert prompt / figures["prefill_s"] * 8 / 32 < measured  # the figure the JSON warns against
