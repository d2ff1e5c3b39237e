// The Python runtime of the page: Pyodide, the roofline wheel and two helper modules,
// in a module Web Worker so that a long program never freezes the page.
//
// Protocol (every message is a plain object with a `type`):
//   page -> worker
//     {type: "boot", indexURL, wheelURL, modules: [{name, url}], interrupt: SharedArrayBuffer | null}
//     {type: "run", id, code, filename}      run a reader's program
//     {type: "calc", id, request}            calculator view; `request` is a JSON string
//   worker -> page
//     {type: "booted", timings}              ready; timings in ms
//     {type: "boot-failed", message}         a readable reason; the page offers Retry
//     {type: "out", id, stream, text}        printed text, batched to at most one message per ~16 ms
//     {type: "done", id, status, traceback?, ms}
//     {type: "calc", id, response, ms}       `response` is a JSON string
// Messages that arrive during boot wait for it; after that each is handled in
// order, synchronously, so a run and a calculation never interleave.

let pyodide = null;
let booting = null;
let interrupt = null;
let runCell = null;
let calculatorView = null;

/**
 * Send printed text to the page as a terminal would show it: each finished line at
 * once, a partial line when the program flushes or ends. A program that prints in a
 * tight loop would send thousands of messages a second, so past a budget per window
 * lines are batched and go out with the next print (or at the end). No timer can
 * help here: the worker is busy running Python until the program returns.
 */
class OutputBatcher {
  static WINDOW_MS = 50;
  static MESSAGES_PER_WINDOW = 16;

  constructor(id) {
    this.id = id;
    this.stream = null;
    this.text = "";
    this.windowStart = -Infinity;
    this.sent = 0;
  }

  write(stream, text) {
    if (stream !== this.stream) this.flush();
    this.stream = stream;
    this.text += text;
    if (text === "" || text.includes("\n")) this.lineDone();
  }

  lineDone() {
    const now = performance.now();
    if (now - this.windowStart >= OutputBatcher.WINDOW_MS) {
      this.windowStart = now;
      this.sent = 0;
    }
    if (this.sent < OutputBatcher.MESSAGES_PER_WINDOW || this.text.length > 65536) this.flush();
  }

  flush() {
    if (!this.text) return;
    postMessage({ type: "out", id: this.id, stream: this.stream, text: this.text });
    this.text = "";
    this.sent += 1;
  }
}

async function fetchText(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${new URL(url).pathname}: HTTP ${response.status}`);
  return response.text();
}

/**
 * Reject, naming the file, if one of Pyodide's own files is missing. loadPyodide does not
 * fail when its .wasm or stdlib cannot be fetched: it logs and waits forever. These HEAD
 * requests run beside it, so they cost nothing when all is well.
 */
async function missingRuntimeFile(indexURL) {
  const files = ["pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json"];
  const answers = await Promise.all(
    files.map(async (name) => {
      const url = new URL(name, indexURL);
      const response = await fetch(url, { method: "HEAD" });
      // 405/501: a host that does not answer HEAD; let the real request decide.
      return response.ok || response.status === 405 || response.status === 501 ? null : `${name}: HTTP ${response.status}`;
    }),
  );
  const missing = answers.filter(Boolean);
  if (missing.length) throw new Error(`a runtime file is missing (${missing.join(", ")})`);
  return new Promise(() => {}); // all present: never settles, so the race is loadPyodide's
}

async function boot({ indexURL, wheelURL, modules, interrupt: buffer }) {
  const started = performance.now();
  // Fetch the helper modules while Pyodide starts; they are small and independent of it.
  const sources = Promise.all(modules.map(async ({ name, url }) => ({ name, text: await fetchText(url) })));
  const { loadPyodide } = await import(new URL("pyodide.mjs", indexURL).href);
  // packageBaseUrl: without it Pyodide would fall back to its CDN for anything it looks up.
  const loading = loadPyodide({ indexURL, packageBaseUrl: indexURL, stdout: () => {}, stderr: () => {} });
  pyodide = await Promise.race([loading, missingRuntimeFile(indexURL)]);
  // A program that calls input() gets EOFError at once: a worker has no prompt() to wait on.
  pyodide.setStdin({ error: true });
  const runtimeReady = performance.now();
  const loaded = await pyodide.loadPackage(wheelURL, { messageCallback: () => {}, errorCallback: () => {} });
  // loadPackage resolves with [] rather than failing when nothing was loaded.
  if (!Array.isArray(loaded) || !loaded.some((pkg) => pkg.name === "roofline")) {
    throw new Error(`the roofline package did not load from ${new URL(wheelURL).pathname}`);
  }
  const wheelReady = performance.now();
  const directory = "/home/pyodide/roofline_page";
  pyodide.FS.mkdirTree(directory);
  for (const { name, text } of await sources) pyodide.FS.writeFile(`${directory}/${name}`, text);
  pyodide.runPython(`import sys; sys.path.insert(0, ${JSON.stringify(directory)})`);
  // Import the package and read its spec files now, so the first Run pays nothing for them.
  // The calculator's module waits until the runs queued during boot are done (see onmessage).
  runCell = pyodide.pyimport("roofline_cell").run;
  pyodide.runPython("import roofline, roofline.sweep; roofline.builtin_specs()");
  if (buffer) {
    interrupt = new Int32Array(buffer);
    pyodide.setInterruptBuffer(interrupt);
  }
  const done = performance.now();
  return {
    pyodide: runtimeReady - started,
    wheel: wheelReady - runtimeReady,
    imports: done - wheelReady,
    total: done - started,
  };
}

function clearInterrupt() {
  if (interrupt) Atomics.store(interrupt, 0, 0);
}

function run({ id, code, filename }) {
  const started = performance.now();
  const output = new OutputBatcher(id);
  const emit = (stream, text) => output.write(stream, text);
  clearInterrupt();
  let answer;
  try {
    answer = JSON.parse(runCell(code, filename, emit));
  } catch (error) {
    // Only an interrupt landing outside the reader's code gets here (or a runtime fault).
    const stopped = String(error && error.message).includes("KeyboardInterrupt");
    answer = stopped ? { status: "stopped" } : { status: "error", traceback: String(error && error.message) };
  }
  output.flush();
  postMessage({ type: "done", id, ...answer, ms: performance.now() - started });
}

function loadCalculator() {
  if (calculatorView) return;
  calculatorView = pyodide.pyimport("roofline_calculator").view_json;
  // Everything imported so far lives as long as the page: move it out of the cyclic
  // collector's reach, so a collection during a calculation has little to walk.
  pyodide.runPython("import gc; gc.collect(); gc.freeze()");
}

function calc({ id, request }) {
  const started = performance.now();
  clearInterrupt();
  let response;
  try {
    loadCalculator();
    response = calculatorView(request);
  } catch (error) {
    response = JSON.stringify({ error: String(error && error.message) });
  }
  postMessage({ type: "calc", id, response, ms: performance.now() - started });
}

self.onmessage = async ({ data }) => {
  if (data.type === "boot") {
    booting ??= boot(data).then(
      (timings) => {
        postMessage({ type: "booted", timings });
        // Runs and calculations queued during boot resume first (they await `booting`,
        // a microtask); this timer fires after them and warms the calculator's module.
        setTimeout(() => {
          try {
            loadCalculator();
          } catch {
            // calc() will try again and report the error where a reader sees it
          }
        }, 0);
      },
      (error) => postMessage({ type: "boot-failed", message: String((error && error.message) || error) }),
    );
    return;
  }
  await booting;
  if (!pyodide || !runCell) return; // boot failed; the page restarts the worker on Retry
  if (data.type === "run") run(data);
  else if (data.type === "calc") calc(data);
};
