// The Press Run cell: an editor, Run / Stop / Reset, and an output that streams.
//
// The cell's root carries data-state, which tests and styles read:
//   starting  Python is not ready yet (Run still works: it waits for Python)
//   ready     idle, Python warm
//   running   a program is running (Stop is enabled)
//   failed    Python could not start here; the message says why, Retry is shown
import { createEditor } from "./editor.mjs";
import { runtime } from "./runtime.mjs";

const MAX_OUTPUT_CHARS = 200_000; // a runaway print loop must not eat the tab's memory

function seconds(ms) {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

class RunCell {
  constructor(root, signal) {
    this.root = root;
    this.filename = root.dataset.rfFilename || "program.py";
    this.output = root.querySelector(".rf-output");
    this.status = root.querySelector(".rf-status");
    this.retry = root.querySelector("[data-rf-action=retry]");
    this.buttons = {
      run: root.querySelector("[data-rf-action=run]"),
      stop: root.querySelector("[data-rf-action=stop]"),
      reset: root.querySelector("[data-rf-action=reset]"),
    };
    this.editor = createEditor(root.querySelector("textarea"), { onRun: () => this.run() });
    this.running = false;
    this.buttons.run.addEventListener("click", () => this.run());
    this.buttons.stop.addEventListener("click", () => this.stop());
    this.buttons.reset.addEventListener("click", () => this.editor.reset());
    this.retry.addEventListener("click", () => runtime.start());
    runtime.addEventListener("state", () => this.showRuntime(), { signal });
    this.showRuntime();
  }

  setState(state) {
    this.root.dataset.state = state;
    this.buttons.stop.disabled = state !== "running";
    this.retry.hidden = state !== "failed";
  }

  showRuntime() {
    if (this.running) return;
    const { state, failure } = runtime;
    if (state === "failed") {
      this.setState("failed");
      this.status.textContent = `${failure} The rest of the page works without it.`;
    } else if (state === "ready") {
      this.setState("ready");
      // Clears a "restarting" note, or says that Python started without its snapshot.
      if (this.status.dataset.kind === "runtime" || !this.status.textContent) this.setStatus(runtime.notice, "runtime");
    } else {
      this.setState("starting");
    }
  }

  setStatus(text, kind = "") {
    this.status.textContent = text;
    this.status.dataset.kind = kind;
  }

  append(stream, text) {
    this.outputLength += text.length;
    const last = this.output.lastChild;
    if (last && last.dataset.stream === stream) last.textContent += text;
    else {
      const span = document.createElement("span");
      span.dataset.stream = stream;
      span.textContent = text;
      this.output.append(span);
    }
    if (this.outputLength > MAX_OUTPUT_CHARS) this.trimOutput();
  }

  /** Keep the newest half of a runaway output, and say that the rest was dropped. */
  trimOutput() {
    const kept = this.output.textContent.slice(-MAX_OUTPUT_CHARS / 2);
    const span = document.createElement("span");
    span.dataset.stream = this.output.lastChild.dataset.stream;
    span.textContent = "… earlier output dropped …\n" + kept;
    this.output.replaceChildren(span);
    this.outputLength = span.textContent.length;
  }

  async run() {
    if (this.running) return;
    this.running = true;
    this.output.replaceChildren();
    this.outputLength = 0;
    this.setState("running");
    this.setStatus(runtime.state === "ready" ? "Running…" : "Starting Python (the first run takes a few seconds)…");
    const started = performance.now();
    const result = await runtime.run(this.editor.value, this.filename, (s, t) => this.append(s, t), this.root);
    this.running = false;
    const took = seconds(performance.now() - started);
    if (result.status === "ok") this.setStatus(`Finished in ${took}.${runtime.notice ? ` ${runtime.notice}` : ""}`);
    else if (result.status === "error") {
      this.append("stderr", result.traceback);
      this.setStatus(`Stopped with an error after ${took}.`);
    } else if (result.status === "stopped") {
      this.setStatus(
        result.restarted ? "Stopped. Python is restarting (a few seconds); Run waits for it." : "Stopped.",
        result.restarted ? "runtime" : "",
      );
    } else this.setStatus(result.message || "Python could not start.");
    this.showRuntime();
  }

  stop() {
    if (!this.running) return;
    this.setStatus("Stopping…");
    runtime.stop();
  }
}

/** Set up every Run cell under `container` that is not set up yet. */
export function mountRunCells(container, signal) {
  for (const root of container.querySelectorAll("[data-rf-cell]:not([data-rf-mounted])")) {
    root.dataset.rfMounted = "";
    runtime.configure({
      wheelURL: new URL(root.dataset.rfWheel, location.href).href,
      version: root.dataset.rfVersion,
      snapshotURL: root.dataset.rfSnapshot ? new URL(root.dataset.rfSnapshot, location.href).href : null,
    });
    new RunCell(root, signal);
  }
}
