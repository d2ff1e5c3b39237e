"""The reference page "How the numbers are computed": the all-reduce and copy latencies it quotes
are the spec's and the package's, and its sentences quote them rather than typing them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from roofline.kvcache import CUDA_COPY_ISSUE
from sitegen.context import load_context
from sitegen.pages import find

DOCS = Path(__file__).resolve().parents[2]
formulas_page = find(DOCS, "reference/formulas/index.md").module()
SOURCE = (DOCS / "reference" / "formulas" / "index.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def ctx():
    return load_context(DOCS.parent)


def test_the_latencies_are_the_h100_spec_s_and_the_package_s(ctx) -> None:
    values = formulas_page.build(ctx).values
    links = ctx.specs.gpu("h100-sxm").interconnect
    nccl, oneshot = links.allreduce_latency_s["nccl"], links.allreduce_latency_s["custom_oneshot"]
    assert values["nccl_base_us"] == f"{nccl.base_s * 1e6:.4g}" == "5.563"
    assert values["nccl_step_us"] == f"{nccl.step_s * 1e6:.4g}" == "0.9734"
    assert (values["nccl_measured_us"], values["nccl_measured_gpus"]) == ("19.19", "8")
    assert sorted(oneshot.measurements) == [2, 4, 8]
    assert (values["oneshot_counts"], values["oneshot_us"]) == ("2, 4 and 8", "3.7, 3.7 and 5.7")
    assert values["copy_us"] == f"{CUDA_COPY_ISSUE.low * 1e6:g} to {CUDA_COPY_ISSUE.high * 1e6:g}"


def test_a_changed_spec_changes_the_page_s_figures(ctx) -> None:
    gpu = ctx.specs.gpu("h100-sxm")
    nccl = gpu.interconnect.allreduce_latency_s["nccl"]
    presets = dict(gpu.interconnect.allreduce_latency_s, nccl=replace(nccl, base_s=6e-6, step_s=1e-6))
    changed = replace(gpu, interconnect=replace(gpu.interconnect, allreduce_latency_s=presets))
    content = formulas_page.PageContent()
    formulas_page.allreduce_values(content, changed)
    assert (content.values["nccl_base_us"], content.values["nccl_step_us"]) == ("6", "1")


def test_the_page_quotes_the_figures_and_types_none_of_them() -> None:
    for name in ("nccl_base_us", "nccl_step_us", "nccl_measured_us", "oneshot_us", "copy_us"):
        assert f"{{{{ n.{name} }}}}" in SOURCE
    for typed in ("19.19", "3.7", "5.7 µs", "5 to 7"):
        assert typed not in SOURCE, typed
