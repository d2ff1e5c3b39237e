// A Run cell: an editor, Run / Stop / Reset, and an output that streams. A page may
// hold several; they share the page's one Python (runtime.mjs), each Run isolated.
//
// The cell's root carries data-state, which tests and styles read:
//   starting  Python is not ready yet (Run still works: it waits for Python)
//   ready     idle, Python warm
//   running   a program is running (Stop is enabled)
//   failed    Python could not start here; the message says why, Retry is shown
import { createEditor } from "./editor.mjs";
import { runtime, startingText } from "./runtime.mjs";

// What the output pane holds at most: the newest lines, as a terminal's scrollback would.
// A runaway print loop must not eat the tab's memory or its main thread.
const MAX_OUTPUT_LINES = 10_000;
const MAX_OUTPUT_CHARS = 500_000;
// And at most this many spans (runs of one stream): output that switches between stdout and
// stderr at every write makes a span per character, and each costs the page what a line does.
const MAX_OUTPUT_SPANS = 10_000;
// Spans (runs of one stream) one block holds at most. A change in a block lays the whole block
// out again, so a line that switches between stdout and stderr at every write (no newline to
// end its block) once grew one block of 200,000 spans, laid out again on every frame: 12 s of
// frozen tab for 100,000 switches. Past this many the line goes on in a new block; stderr's
// spans are blocks of their own anyway, so the page looks the same.
const MAX_BLOCK_SPANS = 256;
// What a block takes before the next whole line starts a new one. A block was a message's
// output, so a program that prints to stdout and stderr in turn, a line each, made a block a
// line: 10,000 blocks for the page to place on every frame, 0.6 s frames.
const MAX_BLOCK_LINES = 256;
const MAX_BLOCK_CHARS = 16_384;

// One formatter for the counts the pane shows: toLocaleString builds one on every call, which
// cost a flood's frames a millisecond or more each.
const COUNT = new Intl.NumberFormat("en-US");

function countLines(text) {
  let count = 0;
  for (let index = text.indexOf("\n"); index !== -1; index = text.indexOf("\n", index + 1)) count += 1;
  return count;
}

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
    this.editor = createEditor(root.querySelector("textarea"), {
      onRun: () => this.run(),
      onRefused: (message) => this.running || this.setStatus(message),
    });
    this.running = false;
    this.clearOutput();
    this.buttons.run.addEventListener("click", () => this.run());
    this.buttons.stop.addEventListener("click", () => this.stop());
    this.buttons.reset.addEventListener("click", () => this.reset());
    this.retry.addEventListener("click", () => runtime.start());
    // Without isolation, using a cell readies a standby Python for Stop (runtime.mjs, keepStandby).
    for (const type of ["focusin", "pointerdown"]) root.addEventListener(type, () => runtime.touch(), { signal });
    runtime.addEventListener("state", () => this.showRuntime(), { signal });
    runtime.addEventListener("progress", () => this.showStarting(), { signal });
    this.starting = false; // a Run was pressed and waits for Python to start (see showStarting)
    this.showRuntime();
  }

  setState(state) {
    this.root.dataset.state = state;
    this.buttons.stop.disabled = state !== "running";
    this.retry.hidden = state !== "failed";
  }

  /** While a pressed Run waits for Python: the bytes downloaded so far and the time left (runtime.mjs). */
  showStarting() {
    if (this.running && this.starting) this.setStatus(startingText(runtime), "starting");
  }

  showRuntime() {
    if (this.running) {
      // Python is up: the Run pressed while it started is running now.
      if (this.starting && runtime.state === "ready") {
        this.starting = false;
        this.setStatus(runtime.busyWithOther(this.root) ? "Waiting for the program running in another cell…" : "Running…");
      } else this.showStarting();
      return;
    }
    const { state, failure } = runtime;
    if (state === "failed") {
      this.setState("failed");
      this.status.textContent = `${failure} The rest of the page works without it.`;
    } else if (state === "ready") {
      this.setState("ready");
      // After a restart that Stop began, the status still says the program was stopped (blanking it
      // at once would hide that), with any notice about how Python started; otherwise it says that
      // Python started without its snapshot, or clears what the runtime said before.
      const { kind } = this.status.dataset;
      if (kind === "restarting") this.setStatus(runtime.notice ? `Stopped. ${runtime.notice}` : "Stopped.");
      else if (kind === "runtime" || !this.status.textContent) this.setStatus(runtime.notice, "runtime");
    } else if (state === "idle" && runtime.deferredBecause) {
      this.setState("starting");
      const megabytes = runtime.downloadMegabytes();
      const size = megabytes ? ` (${megabytes} MB of files)` : "";
      this.setStatus(`Python${size} loads when you press Run or edit: ${runtime.deferredBecause}.`, "runtime");
    } else {
      this.setState("starting");
      if (this.status.dataset.kind === "runtime" && runtime.deferredBecause) this.setStatus("", "runtime");
    }
  }

  setStatus(text, kind = "") {
    this.status.textContent = text;
    this.status.dataset.kind = kind;
  }

  /** Empty the output pane and its counters. */
  clearOutput() {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = null;
    this.output.replaceChildren();
    this.queued = [];
    this.chars = 0;
    this.lines = 0;
    this.dropped = { chars: 0, lines: 0 };
    this.note = null;
    this.blocks = 0; // blocks in the pane (the note aside)
    this.spans = 0; // spans in those blocks
    this.resized = new Set(); // blocks written to since the last frame
    this.last = null; // the last block (its last line is open while its last span's rfOpen)
    this.gap = false; // output was cut after what the pane shows: it goes at the next frame
    this.outpaced = false; // the worker has cut output this Run: it printed faster than the page shows
  }

  /**
   * Queue printed chunks ([[stream, text]]); the pane is updated once per frame, however fast they
   * come. `dropped` is what the worker cut just before these chunks: whatever came earlier, shown
   * or queued, goes too, so the pane is always the newest output without a hole, and the count
   * above it says exactly what is missing.
   */
  append(chunks, dropped = { chars: 0, lines: 0 }) {
    if (dropped.chars) {
      for (const [, text] of this.queued) this.forget(text, false);
      this.queued = [];
      this.gap = true;
      this.outpaced = true;
    }
    for (const chunk of chunks) this.queued.push(chunk); // not push(...chunks): a message may hold 10k of them
    this.dropped.chars += dropped.chars;
    this.dropped.lines += dropped.lines;
    this.frame ??= requestAnimationFrame(() => this.paint());
  }

  /** Paint what is queued now, not at the next frame (a run has ended: its status follows its output). */
  paintNow() {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.paint();
  }

  /**
   * Apply what was queued. The pane is a list of blocks, each a run of whole lines (the last
   * may still be open) of bounded size, so that new output lays out only itself and old output
   * leaves by whole blocks: one long text would be laid out again on every frame, which is what
   * froze the page, and a block a line leaves the page thousands of blocks to place.
   */
  paint() {
    this.frame = null;
    if (this.gap) this.dropShown();
    this.dropQueuedPastCaps();
    for (const [stream, text] of this.queued) {
      let rest = text;
      if (this.last?.rfLast?.rfOpen) {
        // Finish the open line in its own block; what follows goes on in the last block while
        // it has room (hasRoom), else in a new one, so a block starts at a line's start.
        const end = rest.indexOf("\n") + 1 || rest.length;
        this.write(this.last, stream, rest.slice(0, end));
        rest = rest.slice(end);
      }
      if (rest) this.write(this.hasRoom(this.last) ? this.last : this.newBlock(), stream, rest);
    }
    this.queued = [];
    // Each block's height while skipped (content-visibility: auto), so the scrollbar stays honest;
    // set once a frame, not once a write (a style write costs microseconds, and a flood makes
    // hundreds of thousands of writes).
    for (const block of this.resized) {
      if (block.rfFresh) block.append(block.rfFresh);
      block.rfFresh = null;
      const rows = block.rfLines + block.rfOpenSpans;
      if (block.isConnected) block.style.containIntrinsicBlockSize = `auto ${Math.max(rows, 1) * 1.45}em`;
    }
    this.resized.clear();
    this.trimOutput();
    if (this.dropped.chars) this.showDropped();
  }

  /**
   * If the queue alone holds more than the pane keeps, everything older goes without
   * touching the page: the shown output and the queue's oldest text. A flood then costs
   * one pane of layout per frame at most, however much it printed.
   */
  dropQueuedPastCaps() {
    let chars = 0;
    let lines = 0;
    let keepFrom = this.queued.length;
    while (keepFrom > 0) {
      const [, text] = this.queued[keepFrom - 1];
      // A chunk makes a span or two; trimOutput keeps the exact count once they are painted.
      const spans = this.queued.length - keepFrom + 1;
      if (spans > MAX_OUTPUT_SPANS) break;
      if (chars + text.length > MAX_OUTPUT_CHARS || lines + countLines(text) > MAX_OUTPUT_LINES) break;
      chars += text.length;
      lines += countLines(text);
      keepFrom -= 1;
    }
    if (keepFrom === 0) return;
    this.dropShown();
    // Dropped chunks go whole except the newest of them, whose tail may still fit.
    for (const [, text] of this.queued.slice(0, keepFrom - 1)) this.forget(text, false);
    const [stream, text] = this.queued[keepFrom - 1];
    let cut = Math.max(chars + text.length - MAX_OUTPUT_CHARS, 0);
    for (let excess = lines + countLines(text) - MAX_OUTPUT_LINES, index = -1; excess > 0; excess -= 1) {
      index = text.indexOf("\n", index + 1);
      if (index === -1) break;
      cut = Math.max(cut, index + 1);
    }
    this.forget(text.slice(0, cut), false);
    this.queued = [[stream, text.slice(cut)], ...this.queued.slice(keepFrom)];
  }

  /** Drop every block shown, counting what they held (the pane's counts say it) as dropped. */
  dropShown() {
    this.gap = false;
    this.dropped.chars += this.chars;
    this.dropped.lines += this.lines;
    this.chars = 0;
    this.lines = 0;
    this.spans = 0;
    this.output.replaceChildren(...(this.note ? [this.note] : []));
    this.blocks = 0;
    this.last = null;
  }

  /** Whether `block` is still in the pane and takes more lines (MAX_BLOCK_LINES, MAX_BLOCK_CHARS). */
  hasRoom(block) {
    return (
      block !== null &&
      block.isConnected &&
      block.rfSpans < MAX_BLOCK_SPANS &&
      block.rfLines < MAX_BLOCK_LINES &&
      block.rfText.length < MAX_BLOCK_CHARS
    );
  }

  /** An empty block at the end of the pane. */
  newBlock() {
    const block = document.createElement("div");
    block.className = "rf-output__block";
    block.rfText = "";
    block.rfLines = 0;
    // Spans whose text does not end in a newline. Spans alternate streams, and a stderr span is a
    // block (runtime.css), so each span starts a row: the block's rows are its newlines and these.
    // Its height while skipped is counted from them. From its newlines alone, a line of writes that
    // switch stream at every write (a row a span) was guessed one row high, so every such block
    // near the pane was laid out each frame to learn its height: 0.5 s frames.
    block.rfOpenSpans = 0;
    block.rfLast = null; // its last span, and how many it holds, read without asking the DOM
    block.rfSpans = 0;
    block.rfFresh = null; // spans written this frame, put in the block once (see paint)
    this.output.append(block);
    this.blocks += 1;
    this.last = block;
    return block;
  }

  /**
   * Append `text` of `stream` to `block`, in its last span when that span is of the same stream;
   * a block that holds MAX_BLOCK_SPANS spans already is continued by a new one.
   */
  write(block, stream, text) {
    const open = !text.endsWith("\n");
    const last = block.rfLast;
    if (last && last.rfStream === stream) {
      last.firstChild.appendData(text);
      block.rfOpenSpans += Number(open) - Number(last.rfOpen);
      last.rfOpen = open;
    } else {
      if (block.rfSpans >= MAX_BLOCK_SPANS) block = this.newBlock();
      const span = document.createElement("span");
      span.dataset.stream = stream;
      span.rfStream = stream;
      span.rfOpen = open;
      span.append(document.createTextNode(text));
      // A frame's spans go into the page together: one insertion a block, not one a span.
      (block.rfFresh ??= document.createDocumentFragment()).append(span);
      block.rfLast = span;
      block.rfSpans += 1;
      block.rfOpenSpans += Number(open);
      this.spans += 1;
    }
    const lines = countLines(text);
    block.rfText += text;
    block.rfLines += lines;
    this.resized.add(block);
    this.chars += text.length;
    this.lines += lines;
  }

  /** Drop the oldest output until the pane holds at most MAX_OUTPUT_LINES lines and MAX_OUTPUT_CHARS characters. */
  trimOutput() {
    // The oldest block: the first child, after the note if there is one. (Not a live list of
    // blocks: its length is counted again after every removal, which made trimming quadratic.)
    const oldest = () => (this.note ? this.note.nextElementSibling : this.output.firstElementChild);
    // Whole blocks first: removing one re-lays out nothing else.
    const over = () => this.chars > MAX_OUTPUT_CHARS || this.lines > MAX_OUTPUT_LINES || this.spans > MAX_OUTPUT_SPANS;
    while (this.blocks > 1 && over()) {
      const first = oldest();
      this.forget(first.rfText);
      this.spans -= first.childElementCount;
      first.remove();
      this.blocks -= 1;
    }
    // A single block over the caps (one huge print) is cut from its start.
    const only = this.blocks ? oldest() : null;
    if (!only || (this.chars <= MAX_OUTPUT_CHARS && this.lines <= MAX_OUTPUT_LINES)) return;
    const text = only.rfText;
    let cut = Math.max(this.chars - MAX_OUTPUT_CHARS, 0);
    for (let excess = this.lines - MAX_OUTPUT_LINES, index = -1; excess > 0; excess -= 1) {
      index = text.indexOf("\n", index + 1);
      if (index === -1) break;
      cut = Math.max(cut, index + 1);
    }
    only.rfText = text.slice(cut);
    only.rfLines -= countLines(text.slice(0, cut));
    // Spans wholly cut go; the first one left loses its head. Each keeps its stream (at most
    // MAX_BLOCK_SPANS of them, so this is quick).
    for (let left = cut; left > 0; ) {
      const span = only.firstElementChild;
      if (!span) break;
      const node = span.firstChild;
      if (node.length <= left) {
        left -= node.length;
        span.remove();
        this.spans -= 1;
        only.rfSpans -= 1;
        only.rfOpenSpans -= Number(span.rfOpen);
        if (span === only.rfLast) only.rfLast = null;
      } else {
        node.deleteData(0, left);
        left = 0;
      }
    }
    this.forget(text.slice(0, cut));
  }

  /** Count `text` as dropped; `shown`: it was on the page (and in the pane's counts). */
  forget(text, shown = true) {
    if (shown) {
      this.chars -= text.length;
      this.lines -= countLines(text);
    }
    this.dropped.chars += text.length;
    this.dropped.lines += countLines(text);
  }

  /** Say, above the output, how much of it is no longer shown. */
  showDropped() {
    if (!this.note) {
      this.note = document.createElement("div");
      this.note.className = "rf-output__dropped";
      this.output.prepend(this.note);
    }
    const { chars, lines } = this.dropped;
    const size = chars >= 1e6 ? `${(chars / 1e6).toFixed(1)} MB` : `${COUNT.format(Math.ceil(chars / 1e3))} kB`;
    this.note.textContent =
      `… ${COUNT.format(lines)} earlier lines (${size}) not shown: the output keeps the last ` +
      `${COUNT.format(MAX_OUTPUT_LINES)} lines or ${MAX_OUTPUT_CHARS / 1e3} kB` +
      `${this.outpaced ? ", less while a program prints faster than the page can show" : ""} …\n`;
  }

  async run() {
    if (this.running) return;
    this.running = true;
    this.clearOutput();
    this.setState("running");
    const waits = runtime.busyWithOther(this.root);
    this.starting = runtime.state !== "ready";
    if (this.starting) this.showStarting();
    else this.setStatus(waits ? "Waiting for the program running in another cell…" : "Running…");
    const started = performance.now();
    const result = await runtime.run(this.editor.value, this.filename, (c, d) => this.append(c, d), this.root);
    this.running = false;
    this.starting = false;
    if (result.status === "error") this.append([["stderr", result.traceback]]);
    this.paintNow();
    const took = seconds(performance.now() - started);
    const memory = result.restartedForMemory
      ? ` It left Python holding ${Math.round(result.memoryGrowth / 2 ** 20).toLocaleString("en-US")} MB more` +
        " than it started with, so a fresh Python replaces it."
      : result.diedInRun
        ? " Python itself failed running it (Pyodide cannot go on after that), so a fresh Python replaces it."
        : "";
    const notice = runtime.notice ? ` ${runtime.notice}` : "";
    if (result.status === "ok") this.setStatus(`Finished in ${took}.${memory}${notice}`);
    else if (result.status === "error") {
      this.setStatus(`Stopped with an error after ${took}.${memory}`);
    } else if (result.status === "stopped") {
      // A restart is instant when a standby Python was ready (runtime.mjs, keepStandby).
      const restarting = result.restarted && runtime.state !== "ready";
      this.setStatus(
        restarting ? "Stopped. Python is restarting (a few seconds); Run waits for it." : "Stopped.",
        restarting ? "restarting" : "",
      );
    } else this.setStatus(result.message || "Python could not start.");
    this.showRuntime();
  }

  /** The program as committed, an empty output, and a clean Python (see runtime.resetPython). */
  reset() {
    if (this.running) return;
    this.editor.reset();
    this.clearOutput();
    this.setStatus("");
    runtime.resetPython();
  }

  stop() {
    if (!this.running) return;
    this.setStatus("Stopping…");
    runtime.stop(this.root);
  }
}

/** Set up every Run cell under `container` that is not set up yet. */
export function mountRunCells(container, signal) {
  for (const root of container.querySelectorAll("[data-rf-cell]:not([data-rf-mounted])")) {
    root.dataset.rfMounted = "";
    runtime.configureFrom(root);
    new RunCell(root, signal);
  }
}
