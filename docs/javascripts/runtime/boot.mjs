// How the worker gets a warm Python: from the build's memory snapshot when it can,
// from a plain Pyodide boot when it cannot. One exported function, bootPython().
//
// The snapshot (made at build time by scripts/make_snapshot.mjs) is Python's memory
// right after the roofline package and the page's helper modules were imported and
// the spec files parsed. Restoring it skips Python's start-up and those imports. It
// holds memory, not files, so the wheel is unpacked again afterwards, at the path the
// snapshot's module records name (the helper modules are imported already; their
// files are written only for a plain boot).
//
// The snapshot file leaves out what pyodide.asm.wasm's data segments already hold
// (see snapshot_codec.mjs), so rebuilding it needs the wasm's bytes. In a browser the
// worker downloads the wasm once and shares it (shareWasm): one branch becomes the base
// image, the other is compiled at once, while the snapshot downloads, and handed to
// Pyodide when it asks for the file.
//
// Pyodide's snapshot options are underscore-prefixed (private, version-bound), so
// every way a restore can fail (no snapshot, a truncated or corrupted download, a
// snapshot made for another Pyodide, a browser without DecompressionStream) ends in
// a plain boot, and the reason comes back as `timings.fallback` for the status line.
// A missing runtime file is not a snapshot's fault: it fails the boot, naming the file
// (see whileLoading).
//
// Also runs under Node (tests/node/golden.test.mjs): `indexURL` may then be a file
// path, and `fetch` a stand-in that reads files.

import { decodeSnapshot, readContainer, recordsDigest, sha256Hex } from "./snapshot_codec.mjs";
import { keptSnapshots } from "./snapshot_store.mjs";
import { dataSegments, initialMemory, segmentsDigest } from "./wasm_memory.mjs";

/** Where the helper modules live in Pyodide's file system; make_snapshot.mjs uses the same. */
export const MODULE_DIR = "/home/pyodide/roofline_page";
/** Where Pyodide 314 installs wheels; make_snapshot.mjs unpacks the wheel there too. */
export const SITE_PACKAGES = "/lib/python3.14/site-packages";
/**
 * What a started Python has done before the first Run or calculation: imported every module
 * of the roofline package (listed from the package itself, so a new roofline/<topic>.py is
 * included with no list to keep) and parsed the spec files. make_snapshot.mjs runs it before
 * it saves the snapshot, and a plain boot runs it too, so both start from the same imports.
 */
export const PRE_IMPORT = `
import importlib, pkgutil, roofline
for module in pkgutil.iter_modules(roofline.__path__):
    if not module.name.startswith("_"):
        importlib.import_module("roofline." + module.name)
roofline.builtin_specs()
`;
const WASM_FILE = "pyodide.asm.wasm";
const MISSING = "a runtime file is missing";

/**
 * A counter of the bytes Python's files have downloaded, for the reader's progress line:
 * `watch(response)` counts a response's body as it arrives, read from a clone (tee'd, so the
 * original still streams to its reader, and a wasm still compiles from the browser's own
 * response). Each file's whole is its size in `sizes` (address without query or fragment ->
 * bytes, from the build: a host that gzips the wasm sends a Content-Length of the packed bytes,
 * while the body read here is unpacked), else its Content-Length when the host sent it unpacked,
 * else what it turns out to be. `onProgress({loaded, total})` is called at most every
 * PROGRESS_MS, and whenever a file starts or ends. Files count from when they are asked for:
 * the total grows once, early, when Pyodide asks for its own (the standard library).
 */
export const PROGRESS_MS = 100;
export function progressCounter(onProgress, sizes = {}) {
  const files = [];
  let last = 0;
  const report = (force) => {
    const now = performance.now();
    if (!force && now - last < PROGRESS_MS) return;
    last = now;
    let loaded = 0;
    let total = 0;
    for (const file of files) {
      loaded += file.loaded;
      total += file.done ? file.loaded : Math.max(file.size, file.loaded);
    }
    onProgress({ loaded, total });
  };
  const watch = (response) => {
    if (!onProgress || !response?.ok || !response.body || typeof response.clone !== "function") return response;
    const address = response.url ? response.url.split(/[?#]/)[0] : "";
    const length = Number(response.headers.get("Content-Length"));
    const packed = Boolean(response.headers.get("Content-Encoding"));
    const size = sizes[address] ?? (!packed && length > 0 ? length : 0);
    const file = { loaded: 0, size, done: false };
    files.push(file);
    const reader = response.clone().body.getReader();
    const pump = () =>
      reader.read().then(({ done, value }) => {
        if (done) {
          file.done = true;
          return report(true);
        }
        file.loaded += value.byteLength;
        report(false);
        return pump();
      });
    pump().catch(() => (file.done = true));
    report(true);
    return response;
  };
  return { watch };
}

async function fetchOk(get, url, what) {
  const response = await get(url);
  if (!response.ok) throw new Error(`${what}: HTTP ${response.status}`);
  return response;
}

function missingFile(name, status) {
  return new Error(`${MISSING} (${name}: HTTP ${status})`);
}

/**
 * The digest the page expects of the snapshot at `url`: its fragment, `#sha256=HEX`, which
 * the build writes beside the file's address (scripts/sitegen/markers.py); null when there is none.
 * A digest that travels with the page, not only inside the file, is what catches a file
 * replaced whole, its own header rewritten to match. `name` "raw": the digest of the raw
 * snapshot (`&raw=HEX`), which a copy kept between pages must match (snapshot_store.mjs).
 */
export function expectedDigest(url, name = "sha256") {
  const found = new RegExp(`(?:^|[#&])${name}=([0-9a-f]{64})(?:&|$)`).exec(new URL(url, "file:///").hash);
  return found ? found[1] : null;
}

/**
 * The raw Pyodide snapshot from the served file: gzip, undone by the browser's
 * DecompressionStream (or already by the browser, when a host sends the file with
 * Content-Encoding: gzip), around the container of snapshot_codec.mjs, rebuilt over
 * the initial memory of `wasmBytes` (a promise of pyodide.asm.wasm's bytes) when the
 * container says so. Throws a short reason if the file is not a complete snapshot
 * for Pyodide `pyodideVersion` (a version string, or a promise of one) and this wasm,
 * or if its SHA-256 is not the one its header and the page (`url`'s fragment) name:
 * nothing is restored that was not checked.
 */
export async function readSnapshot(get, url, pyodideVersion, wasmBytes) {
  if (typeof DecompressionStream !== "function") throw new Error("this browser has no DecompressionStream");
  const expected = expectedDigest(url);
  const response = await fetchOk(get, url.split("#")[0], "the snapshot");
  let bytes;
  try {
    // Unzipped while it downloads. A host that labels the .gz file Content-Encoding:
    // gzip has had the browser unzip it already: the first bytes tell.
    const reader = response.body.getReader();
    const first = await reader.read();
    const gzipped = !first.done && first.value[0] === 0x1f && first.value[1] === 0x8b;
    const body = new ReadableStream({
      start(controller) {
        if (first.done) controller.close();
        else controller.enqueue(first.value);
      },
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) controller.close();
        else controller.enqueue(value);
      },
    });
    const unzipped = gzipped ? body.pipeThrough(new DecompressionStream("gzip")) : body;
    bytes = new Uint8Array(await new Response(unzipped).arrayBuffer());
  } catch {
    throw new Error("the snapshot download is truncated or corrupted");
  }
  const { header, recordsAt } = readContainer(bytes);
  const version = await pyodideVersion;
  if (header.pyodide !== version) {
    throw new Error(`the snapshot was made for Pyodide ${header.pyodide}, and this is ${version}`);
  }
  if (typeof header.sha256 !== "string") throw new Error("the snapshot carries no digest");
  if (expected && header.sha256 !== expected) throw new Error("the snapshot is not the one this page was built with");
  if ((await recordsDigest(header, bytes.subarray(recordsAt))) !== header.sha256) {
    throw new Error("the snapshot's content does not match its digest (corrupted or altered)");
  }
  return decodeSnapshot(bytes, header.base ? baseImage(await wasmBytes, header) : null);
}

/** The memory the snapshot in `header` was encoded against: the wasm's data segments, placed. */
function baseImage(wasm, header) {
  const segments = dataSegments(wasm);
  if (segmentsDigest(segments) !== header.base.digest) {
    throw new Error(`the snapshot was made from another ${WASM_FILE}`);
  }
  return initialMemory(segments, { total: header.rawBytes, at: header.base.at });
}

/** The URL `input` (a string, URL or Request, as fetch takes) names, made absolute. */
function urlOf(input) {
  return new URL(typeof input === "object" && "url" in input ? input.url : String(input), globalThis.location?.href).href;
}

/** `get(url)` for pyodide.asm.wasm, started at once; rejects naming the file if it is missing. */
function downloadWasm(get, url) {
  const download = get(url).then((response) => {
    if (!response.ok) throw missingFile(WASM_FILE, response.status);
    return response;
  });
  download.catch(() => {}); // awaited by shareWasm's promises
  return download;
}

/** The bytes of pyodide.asm.wasm at `url`, downloaded on their own (a kept snapshot failed its check). */
function wasmBytes(get, url) {
  return downloadWasm(get, url).then(async (response) => new Uint8Array(await response.arrayBuffer()));
}

/**
 * pyodide.asm.wasm downloaded once (`download`, a promise of downloadWasm's response), for
 * two uses: `bytes` (a promise of a Uint8Array, for the snapshot's base image; null when
 * `wantBytes` is false: a kept raw snapshot needs none) and, in a browser, `compiled`: a
 * promise of the module, compiled while it downloads, which whileLoading hands to Pyodide.
 * Under Node (a file path) Pyodide reads the wasm from disk itself, and `compiled` is null.
 */
function shareWasm(download, url, wantBytes = true) {
  const inBrowser = /^https?:/.test(url) && typeof WebAssembly.compileStreaming === "function";
  if (!inBrowser) {
    const bytes = download.then(async (response) => new Uint8Array(await response.arrayBuffer()));
    bytes.catch(() => {});
    return { bytes, compiled: null };
  }
  if (!wantBytes) {
    const compiled = download.then((response) => WebAssembly.compileStreaming(asWasm(response)));
    compiled.catch(() => {});
    return { bytes: null, compiled };
  }
  // The response itself is compiled, not a Response made from its bytes: only a response the
  // browser fetched carries its URL and cache entry, which V8's wasm code cache needs to keep the
  // compiled code beside the file, so a later page (the next chapter, the calculators' worker)
  // loads it instead of compiling again. The clone feeds the snapshot's base image.
  const branches = download.then((response) => [response.clone(), response]);
  const bytes = branches.then(async ([copy]) => new Uint8Array(await copy.arrayBuffer()));
  // Labelled application/wasm whatever the host said (see asWasm).
  const compiled = branches.then(([, response]) => WebAssembly.compileStreaming(asWasm(response)));
  for (const promise of [bytes, compiled]) promise.catch(() => {});
  return { bytes, compiled };
}

/**
 * The raw snapshot kept by an earlier page (`found`, the Cache API's response) if its SHA-256
 * is `digest`, the one this page names; else null. Web Crypto hashes off the worker's thread.
 */
async function checkedCopy(found, digest) {
  try {
    const raw = new Uint8Array(await found.arrayBuffer());
    return (await sha256Hex(raw)) === digest ? raw : null;
  } catch {
    return null;
  }
}

/**
 * Run `load` (a loadPyodide call) with Pyodide's requests watched, and settle as it does,
 * or reject with "a runtime file is missing (NAME: HTTP 404)" as soon as one of Pyodide's
 * files under `runtimeBase` is answered with an error: loadPyodide itself only logs that
 * and waits forever. When `compiled` (see shareWasm) is given, Pyodide's own request for
 * `wasmURL` gets a stand-in and its instantiateStreaming the compiled module, so the file
 * is downloaded and compiled once. fetch and instantiateStreaming are the worker's own
 * (or, under Node, unused by Pyodide), and both are put back when `load` settles.
 */
async function whileLoading(load, { runtimeBase, wasmURL, compiled, memoryBytes = null, watch = (r) => r }) {
  const realFetch = globalThis.fetch;
  const realInstantiate = WebAssembly.instantiateStreaming;
  const realInstantiateBytes = WebAssembly.instantiate;
  let reportMissing;
  const missing = new Promise((_, reject) => (reportMissing = reject));
  const checked = async (input, init) => {
    const response = watch(await realFetch(input, init));
    const url = urlOf(input);
    if (!response.ok && url.startsWith(runtimeBase)) {
      reportMissing(missingFile(url.slice(runtimeBase.length), response.status));
    }
    return url === wasmURL && response.ok ? asWasm(response) : response;
  };
  const standIn = new Response(null, { status: 200 });
  globalThis.fetch = (input, init) =>
    compiled && urlOf(input) === wasmURL ? Promise.resolve(standIn) : checked(input, init);
  WebAssembly.instantiateStreaming = async (source, imports) => {
    if ((await source) !== standIn) return withMemory(await realInstantiate(source, imports), memoryBytes);
    // Pyodide only logs a failed instantiation and waits forever: if the shared
    // download or its compilation failed, fetch and compile the file the usual way.
    const module = await compiled.catch(() => null);
    if (!module) return withMemory(await realInstantiate(checked(wasmURL), imports), memoryBytes);
    return withMemory({ module, instance: await realInstantiateBytes(module, imports) }, memoryBytes);
  };
  // Pyodide under Node (and a browser whose streaming compile failed) instantiates from bytes.
  WebAssembly.instantiate = async (...args) => withMemory(await realInstantiateBytes(...args), memoryBytes);
  try {
    return await Promise.race([load(), missing]);
  } finally {
    globalThis.fetch = realFetch;
    WebAssembly.instantiateStreaming = realInstantiate;
    WebAssembly.instantiate = realInstantiateBytes;
  }
}

/**
 * The bytes of wasm memory a raw Pyodide snapshot holds: the snapshot is a header (its second
 * 32-bit word says where the header ends), then the memory.
 */
function snapshotMemoryBytes(raw) {
  return raw.length - new DataView(raw.buffer, raw.byteOffset, 8).getUint32(4, true);
}

/**
 * `result` (what WebAssembly.instantiate gives: an instance, or {module, instance}) with the
 * memory it exports grown to hold `memoryBytes` (a promise of a count, or null: left alone).
 *
 * Pyodide 314.0.7 restores a snapshot by copying it over the new instance's memory as it is, and
 * that memory starts at the size pyodide.asm.wasm declares (30 MiB): a snapshot taken after
 * Python's heap grew past it ("offset is out of bounds") would never restore. Growing it here,
 * before Emscripten makes its views of the memory, lets any snapshot restore. Instances with
 * no memory of their own (dynamic libraries share the main one) are left alone.
 */
async function withMemory(result, memoryBytes) {
  const instance = result instanceof WebAssembly.Instance ? result : result?.instance;
  const memory = instance?.exports?.memory;
  const wanted = memoryBytes ? await memoryBytes : 0;
  if (memory instanceof WebAssembly.Memory && wanted > memory.buffer.byteLength) {
    memory.grow(Math.ceil((wanted - memory.buffer.byteLength) / 65536));
  }
  return result;
}

/**
 * `response` labelled application/wasm. instantiateStreaming refuses a wasm file served
 * under another type, as some hosts serve .wasm (application/octet-stream), and Pyodide
 * would then wait forever; the bytes are the same, so say what they are.
 */
function asWasm(response) {
  if (/^application\/wasm\b/i.test(response.headers.get("Content-Type") || "")) return response;
  return new Response(response.body, { status: response.status, headers: { "Content-Type": "application/wasm" } });
}

/** The helper modules in `modules` ([{name, url}]) as [{name, text}], downloaded. */
function fetchSources(get, modules) {
  return Promise.all(modules.map(async ({ name, url }) => ({ name, text: await (await fetchOk(get, url, name)).text() })));
}

/** Whether Python has imported the helper module in file `name` (roofline_cell.py: roofline_cell). */
function imported(pyodide, name) {
  return pyodide.runPython(`import sys; ${JSON.stringify(name.replace(/\.py$/, ""))} in sys.modules`) === true;
}

function installPage(pyodide, wheel, sources) {
  pyodide.unpackArchive(wheel, "wheel", { extractDir: SITE_PACKAGES });
  pyodide.FS.mkdirTree(MODULE_DIR);
  for (const { name, text } of sources) pyodide.FS.writeFile(`${MODULE_DIR}/${name}`, text);
}

/**
 * Boot Python with the roofline package and the page's helper modules ready to import.
 * `modules`: [{name, url}] of the helper .py files; `snapshotURL` may be null.
 * Resolves {pyodide, timings}: ms until Pyodide was up (`pyodide`; `snapshotRead`, until
 * the snapshot was downloaded and unpacked), then until the package was ready
 * (`wheelAndImports`), and how Python started: `snapshot: true` (and `kept: true` when the raw
 * snapshot came from the copy an earlier page kept in `caches`, the Cache API: snapshot_store.mjs), or
 * `fallback: "<why the snapshot was not used>"` when a snapshot was offered but failed.
 * `onRestoring()` is called once a snapshot has been read and checked and the wasm compiled, as the restore
 * begins: from then on only a watchdog outside this thread can end a restore that spins.
 *
 * A second Python in the same tab need not read the snapshot again (the download, gunzip, digest and
 * rebuild over the wasm's data took 1.2 to 4.4 s of a standby's boot under load): `keep: true` adds
 * `prepared: {module, snapshot}` to the result after a restore in a browser, the compiled
 * pyodide.asm.wasm and the raw snapshot, checked; a later boot given them as `prepared` restores
 * from them, downloading neither file (Pyodide copies the snapshot into its memory, so one
 * copy serves any number of boots, and workers given the same module share its compiled code).
 */
export async function bootPython({
  indexURL,
  wheelURL,
  snapshotURL = null,
  modules,
  fetch: get = fetch,
  onRestoring = null,
  prepared = null,
  keep = false,
  caches = globalThis.caches,
  onProgress = null,
  sizes = {},
}) {
  const started = performance.now();
  // Every file fetched from here on is counted for the reader's progress line (see progressCounter).
  const counter = progressCounter(onProgress, sizes);
  const plainGet = get;
  get = (url, init) => Promise.resolve(plainGet(url, init)).then(counter.watch);
  // A file path (Node) becomes a file: URL; an http(s) URL is left as it is.
  const base = new URL(indexURL, "file:///");
  // Every download starts now, the small ones first: over HTTP/1.1 a host serves six at a
  // time, and these must not wait behind the megabytes.
  const pyodideScript = import(new URL("pyodide.mjs", base).href);
  // loadPyodide imports Emscripten's 1.2 MB pyodide.asm.mjs only once it has started;
  // importing the same URL now puts it in the module map by then (one download, one instance).
  import(new URL("pyodide.asm.mjs", base).href).catch(() => {}); // a failure shows in loadPyodide
  const wheel = fetchOk(get, wheelURL, "the roofline wheel").then(async (r) => new Uint8Array(await r.arrayBuffer()));
  wheel.catch(() => {}); // awaited below; this only keeps an early failure from going unhandled
  const wasmURL = new URL(WASM_FILE, base).href;
  const timings = {};
  let wasm = null;
  let snapshot = null;
  if (prepared) {
    wasm = { bytes: null, compiled: Promise.resolve(prepared.module) };
    snapshot = Promise.resolve(prepared.snapshot);
  } else if (snapshotURL) {
    const download = downloadWasm(get, wasmURL);
    const version = pyodideScript.then((s) => s.version);
    // A copy an earlier page of the site kept (snapshot_store.mjs): looked up now, read and
    // checked while the wasm compiles. Without one, the served file is read and the result kept.
    const rawDigest = expectedDigest(snapshotURL, "raw");
    const kept = rawDigest ? keptSnapshots(snapshotURL, caches) : null;
    const found = kept ? await kept.find(rawDigest) : null;
    wasm = shareWasm(download, wasmURL, !found);
    const served = (bytes) =>
      readSnapshot(get, snapshotURL, version, bytes).then((raw) => {
        kept?.keep(rawDigest, raw);
        return raw;
      });
    snapshot = found
      ? checkedCopy(found, rawDigest).then((raw) => {
          if (raw) {
            timings.kept = true;
            return raw;
          }
          kept.forget(rawDigest); // not what the page names: read the served file instead
          return served(wasmBytes(get, wasmURL));
        })
      : served(wasm.bytes);
    snapshot.catch(() => {}); // awaited by loadPyodide below
  }
  const { loadPyodide } = await pyodideScript;
  // packageBaseUrl: without it Pyodide would fall back to its CDN for anything it looks up.
  const options = { indexURL, packageBaseUrl: indexURL, stdout: () => {}, stderr: () => {} };
  const watch = { runtimeBase: base.href, wasmURL, compiled: wasm?.compiled ?? null, watch: counter.watch };

  let pyodide = null;
  if (snapshot) {
    try {
      snapshot.then(() => (timings.snapshotRead = performance.now() - started)).catch(() => {});
      // The page's watchdog starts once nothing is left to wait for but the restore itself
      // (the snapshot read and checked, the wasm compiled): a restore cannot stop itself if it spins.
      Promise.all([snapshot, wasm.compiled?.catch(() => null)])
        .then(() => onRestoring?.())
        .catch(() => {});
      const memoryBytes = snapshot.then(snapshotMemoryBytes, () => 0); // a failed read fails the restore below
      pyodide = await whileLoading(() => loadPyodide({ ...options, _loadSnapshot: snapshot }), { ...watch, memoryBytes });
      timings.snapshot = true;
    } catch (error) {
      // A missing runtime file fails the plain boot as well; say that, not "no snapshot".
      if (String(error?.message).startsWith(MISSING)) throw error;
      timings.fallback = String(error?.message || error).split("\n")[0];
    }
  }
  // A plain boot after a failed restore still uses the shared wasm, if it downloaded.
  pyodide ??= await whileLoading(() => loadPyodide(options), watch);
  timings.pyodide = performance.now() - started;
  // A restored Python has the helper modules imported already (make_snapshot.mjs did), so
  // their files are downloaded only for a plain boot, or for a module the snapshot lacks.
  const absent = timings.snapshot ? modules.filter(({ name }) => !imported(pyodide, name)) : modules;
  installPage(pyodide, await wheel, await fetchSources(get, absent));
  if (timings.snapshot) {
    // Every restore starts from the same memory, the random module's state included:
    // reseed it from the system's entropy, or every visit would draw the same numbers.
    pyodide.runPython("import sys\nif 'random' in sys.modules: sys.modules['random'].seed()");
  } else {
    // What the snapshot already holds: the package imported, its spec files parsed,
    // so that the first Run pays nothing for them.
    pyodide.runPython(`import sys; sys.path.insert(0, ${JSON.stringify(MODULE_DIR)})`);
    pyodide.runPython(PRE_IMPORT);
  }
  const done = performance.now();
  timings.wheelAndImports = done - started - timings.pyodide;
  timings.total = done - started;
  if (prepared && timings.snapshot) timings.prepared = true;
  const module = keep && timings.snapshot ? await wasm.compiled?.catch(() => null) : null;
  return { pyodide, timings, prepared: module ? { module, snapshot: await snapshot } : null };
}
