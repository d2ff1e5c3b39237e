// How the worker gets a warm Python: from the build's memory snapshot when it can,
// from a plain Pyodide boot when it cannot. One exported function, bootPython().
//
// The snapshot (made at build time by scripts/make_snapshot.mjs) is Python's memory
// right after the roofline package and the page's helper modules were imported and
// the spec files parsed. Restoring it skips Python's start-up and those imports. It
// holds memory, not files, so the wheel is unpacked and the helper modules written
// again afterwards, at the paths the snapshot's sys.path and module records name.
//
// Pyodide's snapshot options are underscore-prefixed (private, version-bound), so
// every way a restore can fail (no snapshot, a truncated or corrupted download, a
// snapshot made for another Pyodide, a browser without DecompressionStream) ends in
// a plain boot, and the reason comes back as `timings.fallback` for the status line.
//
// Also runs under Node (tests/node/golden.test.mjs): `indexURL` may then be a file
// path, and `fetch` a stand-in that reads files.

import { decodeSnapshot, readContainer } from "./snapshot_codec.mjs";

/** Where the helper modules live in Pyodide's file system; make_snapshot.mjs uses the same. */
export const MODULE_DIR = "/home/pyodide/roofline_page";
/** Where Pyodide 314 installs wheels; make_snapshot.mjs unpacks the wheel there too. */
export const SITE_PACKAGES = "/lib/python3.14/site-packages";
const PYODIDE_FILES = ["pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json"];

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
 * Content-Encoding: gzip), around the container of snapshot_codec.mjs. Throws a short
 * reason if the file is not a complete snapshot for Pyodide `version`.
 */
export async function readSnapshot(get, url, version) {
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
  if (header.pyodide !== version) {
    throw new Error(`the snapshot was made for Pyodide ${header.pyodide}, and this is ${version}`);
  }
  return decodeSnapshot(bytes);
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
  const { loadPyodide, version } = await import(new URL("pyodide.mjs", base).href);
  // packageBaseUrl: without it Pyodide would fall back to its CDN for anything it looks up.
  const options = { indexURL, packageBaseUrl: indexURL, stdout: () => {}, stderr: () => {} };
  const missing = missingRuntimeFile(get, base);
  missing.catch(() => {}); // raced below; a late failure after a good boot means nothing
  const timings = {};

  let pyodide = null;
  if (snapshotURL) {
    try {
      // Pyodide compiles its wasm while the snapshot downloads: it takes the promise.
      const snapshot = readSnapshot(get, snapshotURL, version);
      snapshot.then(() => (timings.snapshotRead = performance.now() - started)).catch(() => {});
      pyodide = await Promise.race([loadPyodide({ ...options, _loadSnapshot: snapshot }), missing]);
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
