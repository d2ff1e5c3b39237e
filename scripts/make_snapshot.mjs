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
// The file written is the snapshot in the container that boot.mjs reads (see
// encodeSnapshot): a one-line JSON header, then the memory with its zero runs
// squeezed out, all gzipped so that a browser undoes it natively (DecompressionStream).
import { readFileSync, writeFileSync } from "node:fs";
import { basename, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { gzipSync } from "node:zlib";
// The paths and the container format are boot.mjs's: it must find what this leaves.
import { MODULE_DIR, SNAPSHOT_FORMAT } from "../docs/javascripts/runtime/boot.mjs";

const SITE_PACKAGES = "/lib/python3.14/site-packages";
/** Runs of zeros shorter than this stay literal: a record costs 8 bytes. */
const MIN_ZERO_RUN = 32;

/**
 * The container: `SNAPSHOT_FORMAT + "\n" + JSON header + "\n"`, then records
 * `[u32 zeros][u32 n][n literal bytes]` that rebuild the raw snapshot of
 * `header.rawBytes` bytes. Pyodide's 31 MB snapshot is two-thirds zeros; gzip
 * alone spends ~1 bit per 258 zero bytes on them and, worse, lets them push the
 * useful bytes apart beyond its 32 KB window. The decoder is a dozen lines of JS.
 */
export function encodeSnapshot(raw, header) {
  const parts = [];
  let literalStart = 0;
  let i = 0;
  const push = (zeros, from, to) => {
    const record = new Uint8Array(8);
    const view = new DataView(record.buffer);
    view.setUint32(0, zeros, true);
    view.setUint32(4, to - from, true);
    parts.push(record, raw.subarray(from, to));
  };
  let pendingZeros = 0;
  while (i < raw.length) {
    if (raw[i] !== 0) {
      i += 1;
      continue;
    }
    let end = i;
    while (end < raw.length && raw[end] === 0) end += 1;
    if (end - i >= MIN_ZERO_RUN || end === raw.length) {
      push(pendingZeros, literalStart, i);
      pendingZeros = end - i;
      literalStart = end;
    }
    i = end;
  }
  push(pendingZeros, literalStart, raw.length);
  const head = new TextEncoder().encode(`${SNAPSHOT_FORMAT}\n${JSON.stringify({ ...header, rawBytes: raw.length })}\n`);
  return Buffer.concat([head, ...parts]);
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
  // Everything a Run or a calculation would import first, and the parsed spec files
  // (builtin_specs caches them). gc.collect() drops start-up garbage before the copy.
  pyodide.runPython(`
import sys
sys.path.insert(0, ${JSON.stringify(MODULE_DIR)})
import importlib, json, linecache, traceback
import roofline, roofline.cli, roofline.report, roofline.sweep
for name in ${JSON.stringify(names)}:
    importlib.import_module(name)
roofline.builtin_specs()
import gc
gc.collect()
`);
  const raw = pyodide.makeMemorySnapshot();
  const encoded = encodeSnapshot(raw, { pyodide: version, wheel: basename(wheelPath), modules: names });
  writeFileSync(outFile, gzipSync(encoded, { level: 9 }));
  console.log(`snapshot: ${(raw.length / 1e6).toFixed(1)} MB raw, ${(encoded.length / 1e6).toFixed(1)} MB without zero runs`);
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) await main();
