// The page's side of the Python runtime: one worker for every widget on the page
// (every Run cell and calculator), booted once and kept across Material's instant
// navigation (this module is loaded once per tab).
//
// Isolation: each Run imports its own copy of the package and the worker puts every
// module's names back afterwards (see roofline_cell.py), so a Run cannot change what
// later Runs or the calculators compute. Reset goes further and, once anything has
// run, replaces the worker: a clean Python, not only the original text.
//
// State, also mirrored on <html data-rf-runtime="...">:
//   idle -> booting -> ready;  booting -> failed (Retry calls start() again);
//   ready -> booting again after Stop had to restart the worker.
//
// How Stop works. When the page is cross-origin isolated (COOP same-origin +
// COEP require-corp), the worker shares an Int32Array on a SharedArrayBuffer
// with us and Pyodide polls it: writing SIGINT (2) raises KeyboardInterrupt in
// the reader's program, and Python stays warm. Without isolation there is no
// shared memory, so Stop terminates the worker and boots a fresh one. If an
// interrupt is not honoured in time (a long call inside C code never checks
// it), Stop falls back to the restart.

const WORKER_URL = new URL("./worker.mjs", import.meta.url);
const INDEX_URL = new URL("../../assets/runtime/pyodide/", import.meta.url);
const MODULES = ["roofline_cell.py", "roofline_views.py"];
const SIGINT = 2;
const INTERRUPT_GRACE_MS = 1500;
// A run that leaves the worker's memory this far above a fresh worker's gets a new worker:
// wasm memory never shrinks, and after a MemoryError the tab would keep gigabytes.
const MEMORY_HEADROOM_BYTES = 512 * 1024 * 1024;

/** Why this browser cannot run Python here, or null if it can. */
export function unsupportedReason() {
  if (typeof WebAssembly !== "object") return "this browser has no WebAssembly";
  if (typeof Worker !== "function") return "this browser has no Web Workers";
  if (typeof BigInt64Array !== "function") return "this browser is too old for the Python runtime";
  return null;
}

class PythonRuntime extends EventTarget {
  constructor() {
    super();
    this.state = "idle";
    this.failure = null;
    this.wheelURL = null;
    this.snapshotURL = null;
    this.version = "";
    this.worker = null;
    this.pending = new Map();
    this.nextId = 1;
    this.runningId = null;
    this.runningOwner = null;
    this.stopTimer = null;
    this.timings = null;
    this.boots = 0; // workers started in this tab; the tests check that widgets share one
    this.ranSinceBoot = false;
    this.notice = "";
    this.calculators = new Map(); // name -> module URL of the calculators shown so far (see preloadCalculator)
    // Why Python waits for the reader (Save-Data, a slow connection), or "": see main.mjs.
    this.deferredBecause = "";
    this.isolated = globalThis.crossOriginIsolated === true && typeof SharedArrayBuffer === "function";
    // [0]: the signal Pyodide polls; [1]: set when Stop is pressed, so that a KeyboardInterrupt
    // the program raises itself is told apart from Stop.
    this.shared = this.isolated ? new SharedArrayBuffer(8) : null;
    this.interrupt = this.shared ? new Int32Array(this.shared, 0, 1) : null;
    this.stopFlag = this.shared ? new Int32Array(this.shared, 4, 1) : null;
  }

  /**
   * Where the package wheel and the snapshot are, read from a widget's markup
   * (data-rf-wheel, data-rf-version, data-rf-snapshot: scripts/sitegen/widgets.py); the
   * first widget seen sets them.
   */
  configureFrom(widget) {
    const { rfWheel, rfVersion, rfSnapshot } = widget.dataset;
    if (rfWheel) this.wheelURL ??= new URL(rfWheel, location.href).href;
    if (rfSnapshot) this.snapshotURL ??= new URL(rfSnapshot, location.href).href;
    this.version ||= rfVersion || "";
  }

  /** Hold the warm-up until the reader uses a widget; `reason` is shown in each cell's status. */
  deferUntilUsed(reason) {
    this.deferredBecause = reason;
    this.dispatchEvent(new CustomEvent("state", { detail: { state: this.state, failure: this.failure } }));
  }

  setState(state, failure = null) {
    this.state = state;
    this.failure = failure;
    document.documentElement.dataset.rfRuntime = state;
    this.dispatchEvent(new CustomEvent("state", { detail: { state, failure } }));
  }

  /** Boot the worker unless it is booting or ready. Safe to call any number of times. */
  start() {
    if (this.state === "booting" || this.state === "ready") return;
    const reason = unsupportedReason();
    if (reason) return this.fail(`Python cannot run in this browser: ${reason}.`);
    if (!this.wheelURL) return this.fail("The page does not say where the roofline package is.");
    this.setState("booting");
    this.boots += 1;
    this.ranSinceBoot = false;
    document.documentElement.dataset.rfBoots = String(this.boots);
    this.startedAt = performance.now();
    let moduleWorker = false;
    const options = {
      get type() {
        moduleWorker = true; // a browser that reads this option supports module workers
        return "module";
      },
    };
    // The worker boots from these settings as soon as its script runs (see worker.mjs).
    const script = new URL(this.withVersion(WORKER_URL));
    script.hash = encodeURIComponent(
      JSON.stringify({
        indexURL: INDEX_URL.href,
        wheelURL: this.wheelURL,
        snapshotURL: this.snapshotURL,
        modules: MODULES.map((name) => ({ name, url: this.withVersion(new URL(name, WORKER_URL)) })),
      }),
    );
    const worker = new Worker(script.href, options);
    if (!moduleWorker) {
      worker.terminate();
      return this.fail("Python cannot run in this browser: it has no module workers.");
    }
    this.worker = worker;
    worker.onmessage = ({ data }) => this.receive(worker, data);
    worker.onerror = (event) => {
      event.preventDefault();
      if (worker !== this.worker) return;
      this.fail(`The Python runtime could not start (${event.message || "its worker script failed to load"}).`);
    };
    if (this.shared) worker.postMessage({ type: "interrupt", buffer: this.shared });
    // Anything asked for while the worker was away is asked again; then the page's calculator
    // modules are imported, so that a reader's first input pays only for the calculation.
    for (const [id, job] of this.pending) worker.postMessage({ ...job.message, id });
    for (const [calculator, module] of this.calculators) worker.postMessage({ type: "load", calculator, module });
  }

  withVersion(url) {
    const versioned = new URL(url);
    if (this.version) versioned.searchParams.set("v", this.version);
    return versioned.href;
  }

  fail(message) {
    this.worker?.terminate();
    this.worker = null;
    for (const [id, job] of this.pending) {
      job.resolve(job.kind === "run" ? { status: "failed", message } : { error: message, failed: true });
      this.pending.delete(id);
    }
    this.runningId = null;
    this.setState("failed", message);
  }

  receive(worker, data) {
    if (worker !== this.worker) return; // a message from a worker we already replaced
    if (data.type === "booted") {
      this.timings = { ...data.timings, sinceStart: performance.now() - this.startedAt };
      // Said in the Run cell's status line: a plain boot is correct, only slower.
      this.notice = data.timings.fallback ? `Python started without its snapshot (${data.timings.fallback}).` : "";
      this.setState("ready");
    } else if (data.type === "boot-failed") {
      this.fail(`Python could not start: ${data.message}`);
    } else if (data.type === "out") {
      this.pending.get(data.id)?.onOutput?.(data.chunks, data.dropped);
    } else if (data.type === "done" || data.type === "calc") {
      const job = this.pending.get(data.id);
      if (!job) return;
      this.pending.delete(data.id);
      if (data.id === this.runningId) this.finishRun();
      const restartForMemory = data.type === "done" && data.memoryGrowth > MEMORY_HEADROOM_BYTES;
      job.resolve(data.type === "done" ? { ...data, restartedForMemory: restartForMemory } : { ...JSON.parse(data.response), ms: data.ms });
      if (restartForMemory) this.restart();
    }
  }

  send(kind, message, extra = {}) {
    const id = this.nextId++;
    return {
      id,
      promise: new Promise((resolve) => {
        this.pending.set(id, { kind, message, resolve, ...extra });
        // A live worker takes it now (it queues work until booted); otherwise start() sends it.
        if (this.worker) this.worker.postMessage({ ...message, id });
        else this.start();
      }),
    };
  }

  /**
   * Run a program; `onOutput(chunks, dropped)` gets what it prints as it prints it: [[stream, text]]
   * and how many characters and lines of a flood the worker dropped.
   * Resolves with {status: "ok" | "error" | "stopped" | "failed", traceback?, ms?}.
   * `owner` is the element that asked, so a run left behind by navigation can be stopped.
   */
  run(code, filename, onOutput, owner = null) {
    const { id, promise } = this.send("run", { type: "run", code, filename }, { onOutput });
    this.ranSinceBoot = true;
    this.runningId = id;
    this.runningOwner = owner;
    return promise;
  }

  finishRun() {
    clearTimeout(this.stopTimer);
    this.runningId = null;
    this.runningOwner = null;
  }

  /** Import calculator `name`'s module (at `moduleURL`) as soon as Python is up, and after every restart. */
  preloadCalculator(name, moduleURL) {
    const module = this.withVersion(moduleURL);
    if (this.calculators.get(name) === module) return;
    this.calculators.set(name, module);
    this.worker?.postMessage({ type: "load", calculator: name, module });
  }

  /** Ask calculator `name` (its Python module at `moduleURL`); resolves with its parsed answer (or {error}). */
  calculate(name, moduleURL, params) {
    const message = { type: "calc", calculator: name, module: this.withVersion(moduleURL), request: JSON.stringify(params) };
    return this.send("calc", message).promise;
  }

  /** A clean Python for Reset: a new worker, unless nothing has run in this one (then it is clean). */
  resetPython() {
    if (this.runningId !== null || !this.ranSinceBoot || this.state !== "ready") return;
    this.restart();
  }

  /** Stop the running program: interrupt it when isolated, else restart the worker. */
  stop() {
    if (this.runningId === null) return;
    if (this.interrupt && this.state === "ready") {
      Atomics.store(this.stopFlag, 0, 1);
      Atomics.store(this.interrupt, 0, SIGINT);
      clearTimeout(this.stopTimer);
      this.stopTimer = setTimeout(() => this.restart(), INTERRUPT_GRACE_MS);
    } else {
      this.restart();
    }
  }

  /** Throw the worker away and boot a new one; the run in progress ends as "stopped". */
  restart() {
    const runningId = this.runningId;
    this.finishRun();
    this.worker?.terminate();
    this.worker = null;
    const job = this.pending.get(runningId);
    if (job) {
      this.pending.delete(runningId);
      job.resolve({ status: "stopped", restarted: true });
    }
    this.setState("idle");
    this.start();
  }

  /** Stop a run whose cell has left the page (instant navigation), so it does not hold the worker. */
  stopOrphans() {
    if (this.runningId !== null && this.runningOwner && !this.runningOwner.isConnected) this.stop();
  }
}

export const runtime = new PythonRuntime();
