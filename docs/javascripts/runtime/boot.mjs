// How the worker gets a warm Python: from the build's memory snapshot when it can,
// from a plain Pyodide boot when it cannot. One exported function, bootPython().
//
// The snapshot (made at build time by scripts/make_snapshot.mjs) is Python's memory
// right after the roofline package and the page's helper modules were imported and
// the spec files parsed. Restoring it skips Python's start-up and those imports. It
// holds memory, not files, so the wheel is unpacked and the helper modules written
// again afterwards, at the paths the snapshot's sys.path and module records name.
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
//
// Also runs under Node (tests/node/golden.test.mjs): `indexURL` may then be a file
// path, and `fetch` a stand-in that reads files.

import { decodeSnapshot, readContainer } from "./snapshot_codec.mjs";
import { dataSegments, initialMemory, segmentsDigest } from "./wasm_memory.mjs";

/** Where the helper modules live in Pyodide's file system; make_snapshot.mjs uses the same. */
export const MODULE_DIR = "/home/pyodide/roofline_page";
/** Where Pyodide 314 installs wheels; make_snapshot.mjs unpacks the wheel there too. */
export const SITE_PACKAGES = "/lib/python3.14/site-packages";
const WASM_FILE = "pyodide.asm.wasm";
const PYODIDE_FILES = ["pyodide.asm.mjs", WASM_FILE, "python_stdlib.zip", "pyodide-lock.json"];

async function fetchOk(get, url, what) {
  const response = await get(url);
  if (!response.ok) throw new Error(`${what}: HTTP ${response.status}`);
  return response;
}

/**
 * Reject, naming the file, if one of Pyodide's own files is missing. loadPyodide does not
 * fail when its .wasm or stdlib cannot be fetched: it logs and waits forever. These HEAD
 * requests run beside it, so they cost nothing when all is well.
 */
async function missingRuntimeFile(get, base) {
  const answers = await Promise.all(
    PYODIDE_FILES.map(async (name) => {
      const response = await get(new URL(name, base).href, { method: "HEAD" });
      // 405/501: a host that does not answer HEAD; let the real request decide.
      return response.ok || response.status === 405 || response.status === 501 ? null : `${name}: HTTP ${response.status}`;
    }),
  );
  const missing = answers.filter(Boolean);
  if (missing.length) throw new Error(`a runtime file is missing (${missing.join(", ")})`);
  return new Promise(() => {}); // all present: never settles, so the race is loadPyodide's
}

/**
 * The raw Pyodide snapshot from the served file: gzip, undone by the browser's
 * DecompressionStream (or already by the browser, when a host sends the file with
 * Content-Encoding: gzip), around the container of snapshot_codec.mjs, rebuilt over
 * the initial memory of `wasmBytes` (a promise of pyodide.asm.wasm's bytes) when the
 * container says so. Throws a short reason if the file is not a complete snapshot
 * for Pyodide `pyodideVersion` (a version string, or a promise of one) and this wasm.
 */
export async function readSnapshot(get, url, pyodideVersion, wasmBytes) {
  if (typeof DecompressionStream !== "function") throw new Error("this browser has no DecompressionStream");
  const response = await fetchOk(get, url, "the snapshot");
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
  const { header } = readContainer(bytes);
  const version = await pyodideVersion;
  if (header.pyodide !== version) {
    throw new Error(`the snapshot was made for Pyodide ${header.pyodide}, and this is ${version}`);
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

/**
 * pyodide.asm.wasm downloaded once, for two uses: `bytes` (a promise of a Uint8Array,
 * for the snapshot's base image) and, in a browser, a module compiled while it
 * downloads. `during(work)` runs `work` (loadPyodide) with Pyodide's own request for
 * the file answered by a stand-in and its instantiateStreaming given the compiled
 * module; both are put back when `work` settles, whatever happens.
 *
 * Under Node (a file path) Pyodide reads the wasm from disk itself and nothing is
 * stood in for: `bytes` is all that is used.
 */
function shareWasm(get, url) {
  const download = fetchOk(get, url, WASM_FILE);
  const inBrowser = /^https?:/.test(url) && typeof WebAssembly.compileStreaming === "function";
  if (!inBrowser) {
    const bytes = download.then(async (response) => new Uint8Array(await response.arrayBuffer()));
    bytes.catch(() => {});
    return { bytes, during: (work) => work() };
  }
  const branches = download.then((response) => response.body.tee());
  const bytes = branches.then(async ([, ours]) => new Uint8Array(await new Response(ours).arrayBuffer()));
  const compiled = branches.then(([toCompile]) =>
    WebAssembly.compileStreaming(new Response(toCompile, { headers: { "Content-Type": "application/wasm" } })),
  );
  for (const promise of [bytes, compiled]) promise.catch(() => {});
  const standIn = new Response(null, { status: 200 });
  const during = async (work) => {
    const { fetch: realFetch } = globalThis;
    const realInstantiate = WebAssembly.instantiateStreaming;
    globalThis.fetch = (input, init) => (urlOf(input) === url ? Promise.resolve(standIn) : realFetch(input, init));
    WebAssembly.instantiateStreaming = async (source, imports) => {
      if ((await source) !== standIn) return realInstantiate(source, imports);
      // Pyodide only logs a failed instantiation and waits forever: if the shared
      // download or its compilation failed, fetch and compile the file the usual way.
      const module = await compiled.catch(() => null);
      if (!module) return realInstantiate(realFetch(url), imports);
      return { module, instance: await WebAssembly.instantiate(module, imports) };
    };
    try {
      return await work();
    } finally {
      globalThis.fetch = realFetch;
      WebAssembly.instantiateStreaming = realInstantiate;
    }
  };
  return { bytes, during };
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
 * (`wheelAndImports`), and how Python started: `snapshot: true`, or
 * `fallback: "<why the snapshot was not used>"` when a snapshot was offered but failed.
 */
export async function bootPython({ indexURL, wheelURL, snapshotURL = null, modules, fetch: get = fetch }) {
  const started = performance.now();
  // The small files download while Pyodide starts; nothing about them depends on it.
  const sources = Promise.all(
    modules.map(async ({ name, url }) => ({ name, text: await (await fetchOk(get, url, name)).text() })),
  );
  const wheel = fetchOk(get, wheelURL, "the roofline wheel").then(async (r) => new Uint8Array(await r.arrayBuffer()));
  sources.catch(() => {}); // awaited below; this only keeps an early failure from going unhandled
  wheel.catch(() => {});
  // A file path (Node) becomes a file: URL; an http(s) URL is left as it is.
  const base = new URL(indexURL, "file:///");
  const pyodideScript = import(new URL("pyodide.mjs", base).href);
  // loadPyodide imports Emscripten's 1.2 MB pyodide.asm.mjs only once it has started;
  // importing the same URL now puts it in the module map by then (one download, one instance).
  import(new URL("pyodide.asm.mjs", base).href).catch(() => {}); // a failure shows in loadPyodide
  // The large downloads start at once, not after Pyodide's own script has loaded.
  let wasm = null;
  let snapshot = null;
  if (snapshotURL) {
    wasm = shareWasm(get, new URL(WASM_FILE, base).href);
    snapshot = readSnapshot(get, snapshotURL, pyodideScript.then((script) => script.version), wasm.bytes);
    snapshot.catch(() => {}); // awaited by loadPyodide below
  }
  const { loadPyodide } = await pyodideScript;
  // packageBaseUrl: without it Pyodide would fall back to its CDN for anything it looks up.
  const options = { indexURL, packageBaseUrl: indexURL, stdout: () => {}, stderr: () => {} };
  const missing = missingRuntimeFile(get, base);
  missing.catch(() => {}); // raced below; a late failure after a good boot means nothing
  const timings = {};

  let pyodide = null;
  if (snapshot) {
    try {
      snapshot.then(() => (timings.snapshotRead = performance.now() - started)).catch(() => {});
      pyodide = await wasm.during(() => Promise.race([loadPyodide({ ...options, _loadSnapshot: snapshot }), missing]));
      timings.snapshot = true;
    } catch (error) {
      // A missing runtime file fails the plain boot as well; say that, not "no snapshot".
      if (String(error?.message).startsWith("a runtime file is missing")) throw error;
      timings.fallback = String(error?.message || error).split("\n")[0];
    }
  }
  pyodide ??= await Promise.race([loadPyodide(options), missing]);
  timings.pyodide = performance.now() - started;
  installPage(pyodide, await wheel, await sources);
  if (timings.snapshot) {
    // Every restore starts from the same memory, the random module's state included:
    // reseed it from the system's entropy, or every visit would draw the same numbers.
    pyodide.runPython("import sys\nif 'random' in sys.modules: sys.modules['random'].seed()");
  } else {
    // What the snapshot already holds: the package imported, its spec files parsed,
    // so that the first Run pays nothing for them.
    pyodide.runPython(`import sys; sys.path.insert(0, ${JSON.stringify(MODULE_DIR)})`);
    pyodide.runPython("import roofline, roofline.sweep; roofline.builtin_specs()");
  }
  const done = performance.now();
  timings.wheelAndImports = done - started - timings.pyodide;
  timings.total = done - started;
  return { pyodide, timings };
}
