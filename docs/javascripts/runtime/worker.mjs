// The Python runtime of the page: Pyodide, the roofline wheel and two helper modules,
// in a module Web Worker so that a long program never freezes the page.
//
// Protocol (every message is a plain object with a `type`):
//   page -> worker
//     {type: "boot", indexURL, wheelURL, snapshotURL, modules: [{name, url}], interrupt: SharedArrayBuffer | null}
//     {type: "run", id, code, filename}      run a reader's program
//     {type: "calc", id, request}            calculator view; `request` is a JSON string
//   worker -> page
//     {type: "booted", timings}              ready; timings in ms, and `fallback` if the snapshot failed
//     {type: "boot-failed", message}         a readable reason; the page offers Retry
//     {type: "out", id, stream, text}        printed text, batched to at most one message per ~16 ms
//     {type: "done", id, status, traceback?, ms}
//     {type: "calc", id, response, ms}       `response` is a JSON string
// Messages that arrive during boot wait for it; after that each is handled in
// order, synchronously, so a run and a calculation never interleave.

import { bootPython } from "./boot.mjs";

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

async function boot({ indexURL, wheelURL, snapshotURL, modules, interrupt: buffer }) {
  // boot.mjs restores Python from the build's snapshot, or boots it plainly if it cannot.
  const booted = await bootPython({ indexURL, wheelURL, snapshotURL, modules });
  pyodide = booted.pyodide;
  // A program that calls input() gets EOFError at once: a worker has no prompt() to wait on.
  pyodide.setStdin({ error: true });
  // The calculator's module waits until the runs queued during boot are done (see onmessage).
  runCell = pyodide.pyimport("roofline_cell").run;
  if (buffer) {
    interrupt = new Int32Array(buffer);
    pyodide.setInterruptBuffer(interrupt);
  }
  return booted.timings;
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
