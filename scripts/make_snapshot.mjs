// Make the page's Pyodide memory snapshot: Python booted, the roofline wheel unpacked,
// the package and the page's helper modules imported, the spec files parsed.
//
// Run: node scripts/make_snapshot.mjs PYODIDE_DIR WHEEL OUT_FILE MODULE.py...
// (scripts/build_snapshot.py runs it for the site build and caches what it writes).
//
// A browser that restores this memory skips Python's own start-up (about 4 s here)
// and every import the first Run would pay for. The snapshot holds wasm memory only,
// not Emscripten's file system: docs/javascripts/runtime/boot.mjs unpacks the wheel
// and writes the helper modules again after a restore, at the same paths as here.
//
// The file written is the snapshot in the container of snapshot_codec.mjs (what the
// wasm's data segments already hold and zero runs left out, far repeats made copies),
// gzipped so that a browser undoes it natively (DecompressionStream).
import { readFileSync, writeFileSync } from "node:fs";
import { basename, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { gzipSync } from "node:zlib";
// The paths and the container are boot.mjs's: it must find what this leaves.
import { MODULE_DIR, PRE_IMPORT, SITE_PACKAGES } from "../docs/javascripts/runtime/boot.mjs";
import { sealedSnapshot, sha256Hex } from "../docs/javascripts/runtime/snapshot_codec.mjs";
import { dataSegments, initialMemory, segmentsDigest } from "../docs/javascripts/runtime/wasm_memory.mjs";

/**
 * Zero the heap's free chunks, so that the snapshot carries no stale bytes of freed
 * objects: they compress badly, and nothing reads them. Takes every free chunk with
 * malloc (largest first, and never one that would move the heap's break, which
 * would grow the memory and the snapshot), zeroes it, and frees it all again.
 * Here this cut the non-zero bytes from 10.0 to 8.1 MB, and the gzipped file by 1 MB.
 */
function zeroFreeMemory(module) {
  const memoryBytes = module.HEAP8.length;
  const taken = [];
  for (const size of [1 << 20, 1 << 16, 1 << 12, 1 << 9, 64]) {
    for (;;) {
      const brk = module._sbrk(0);
      const pointer = module._malloc(size);
      if (!pointer || module._sbrk(0) !== brk || module.HEAP8.length !== memoryBytes) {
        if (pointer) module._free(pointer);
        break;
      }
      module.HEAP8.fill(0, pointer, pointer + size);
      taken.push(pointer);
    }
  }
  for (const pointer of taken) module._free(pointer);
}

async function main() {
  const [pyodideDir, wheelPath, outFile, ...modules] = process.argv.slice(2);
  if (!outFile || modules.length === 0) {
    console.error("usage: node scripts/make_snapshot.mjs PYODIDE_DIR WHEEL OUT_FILE MODULE.py...");
    process.exit(2);
  }
  const indexURL = `${resolve(pyodideDir)}/`;
  const { loadPyodide, version } = await import(pathToFileURL(`${indexURL}pyodide.mjs`).href);
  const pyodide = await loadPyodide({ indexURL, _makeSnapshot: true, stdout: () => {}, stderr: () => {} });
  // loadPackage() before makeMemorySnapshot() fails in Pyodide 314; unpackArchive works.
  pyodide.unpackArchive(new Uint8Array(readFileSync(wheelPath)), "wheel", { extractDir: SITE_PACKAGES });
  pyodide.FS.mkdirTree(MODULE_DIR);
  const names = [];
  for (const path of modules) {
    pyodide.FS.writeFile(`${MODULE_DIR}/${basename(path)}`, readFileSync(path, "utf8"));
    names.push(basename(path, ".py"));
  }
  // Everything a Run or a calculation would import first (boot.mjs's PRE_IMPORT: every
  // module of the package), and the parsed spec files (builtin_specs caches them). What
  // lives as long as the page is then frozen out of the cyclic collector's reach (gc.freeze), so that a collection in the browser walks
  // only what came after: 5 ms instead of 42 here. A helper module's prepare(), where it
  // has one, runs last: roofline_cell's imports the first Run's own copy of the package,
  // so that Run pays nothing for it, and that copy, left unfrozen, can be collected once
  // the Run is over. gc.collect() drops start-up garbage before the copy.
  pyodide.runPython(`
import sys
sys.path.insert(0, ${JSON.stringify(MODULE_DIR)})
import importlib, json, linecache, traceback
${PRE_IMPORT}
helpers = [importlib.import_module(name) for name in ${JSON.stringify(names)}]
import gc
gc.collect()
gc.freeze()
for helper in helpers:
    getattr(helper, "prepare", lambda: None)()
del helpers
gc.collect()
`);
  zeroFreeMemory(pyodide._module);
  const raw = pyodide.makeMemorySnapshot();
  // Pyodide's snapshot is a header, then the wasm memory: the base image goes after the header.
  const at = raw.length - pyodide._module.HEAP8.length;
  const segments = dataSegments(new Uint8Array(readFileSync(`${indexURL}pyodide.asm.wasm`)));
  const base = initialMemory(segments, { total: raw.length, at });
  // rawSha256: what a copy of the raw snapshot that a page kept for the next (snapshot_store.mjs)
  // must match; the pages name it beside the file's address (hooks/runtime.py).
  const header = { pyodide: version, wheel: basename(wheelPath), modules: names, rawSha256: await sha256Hex(raw) };
  // Sealed with its digest: boot.mjs restores nothing that does not match it.
  const encoded = await sealedSnapshot(raw, { ...header, base: { digest: segmentsDigest(segments), at } }, base);
  const zipped = gzipSync(encoded, { level: 9 });
  writeFileSync(outFile, zipped);
  const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;
  console.log(`snapshot: ${mb(raw.length)} raw, ${mb(encoded.length)} encoded, ${mb(zipped.length)} gzipped`);
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) await main();
