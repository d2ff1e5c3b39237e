from roofline import Hardware, Workload, builtin_specs
from roofline.prefixpage import cache_read

specs = builtin_specs()
read = cache_read(Hardware(specs.gpu("h100-sxm")), Workload(specs.model("llama-3.1-8b"), context=4096))
print(f"{read.bytes_moved / 1e9:.2f} GB read in {read.seconds * 1e3:.3f} ms")
