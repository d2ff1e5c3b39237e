"""One user's cache on a GPU: its size, its read at a share of peak bandwidth, and its share of memory."""

from roofline import Hardware, Workload, builtin_specs
from roofline import formatting as fmt
from roofline.forms import Field, Form, Output
from roofline.prefixpage import cache_read

SPECS = builtin_specs()
FORM = Form(
    title="Reading one user's cache",
    legend="Model, GPU and context",
    fields=[
        Field.model("model", "Model", SPECS, default="llama-3.1-8b"),
        Field.gpu("gpu", "GPU", SPECS, default="h100-sxm"),
        Field.number("context", "Context (tokens)", low=1, high=131072, default=4096),
        Field.number("reached", "Share of peak bandwidth reached", low=0.5, high=1, step=0.05, default=0.8),
    ],
    outputs=[
        Output.text("cache", "Cache"),
        Output.text("read", "Read per step"),
        Output.text("share", "Share of the memory the driver reports"),
    ],
)


@FORM.view
def view(model: str, gpu: str, context: int, reached: float) -> dict:
    specs = FORM.specs()  # the built-in specs, and the reader's own GPU or model when the page sends one
    hardware = Hardware(specs.gpu(gpu))
    read = cache_read(hardware, Workload(specs.model(model), context=context))
    return {
        "cache": fmt.gigabytes(read.bytes_moved, 2),
        "read": fmt.milliseconds(read.seconds / reached),
        "share": f"{read.bytes_moved / hardware.addressable_memory_bytes:.2%}",
    }
