"""The page's numbers: one value, one table, one figure."""

import altair as alt

from roofline import Hardware, Workload
from roofline import formatting as fmt
from roofline.prefixpage import cache_read
from sitegen.context import Context
from sitegen.figures import figure_spec
from sitegen.page import PageContent
from sitegen.tables import markdown_table

GPU, MODEL = "h100-sxm", "llama-3.1-8b"
CONTEXTS = (1024, 4096, 16384, 65536)


def build(ctx: Context) -> PageContent:
    content = PageContent()
    hardware, model = Hardware(ctx.specs.gpu(GPU)), ctx.specs.model(MODEL)
    reads = {tokens: cache_read(hardware, Workload(model, context=tokens)) for tokens in CONTEXTS}
    content.put("read_4k", fmt.milliseconds(reads[4096].seconds))
    rows = [(f"{t:,}", fmt.gigabytes(r.bytes_moved, 2), fmt.milliseconds(r.seconds)) for t, r in reads.items()]
    content.table("prefix-caching-reads", markdown_table(("Context", "Cache", "Read per step"), rows, right={0, 1, 2}))
    points = [{"tokens": t, "ms": r.seconds * 1e3} for t, r in reads.items()]
    chart = alt.Chart(alt.Data(values=points)).mark_line(point=True).encode(x="tokens:Q", y="ms:Q")
    title, subtitle = f"Reading one user's cache, {model.name}", ["Each decode step reads all of it."]
    content.figure("prefix-caching", figure_spec(chart, title, subtitle), "The read grows with the context.")
    return content
