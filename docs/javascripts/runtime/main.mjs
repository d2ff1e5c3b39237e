// Entry point, loaded on every page (mkdocs.yml extra_javascript). It does nothing on
// pages without a Run cell or calculator. On pages with one it starts Python as soon
// as the runtime's script has loaded, while the widgets are set up: the worker downloads
// and restores it off the main thread, so the page stays responsive, and a reader who
// presses Run, even at once, waits for as little of the start-up as can be. On Save-Data or a slow
// connection it waits instead until the reader uses a widget, and the cells say so.
//
// Material's instant navigation swaps page content without reloading scripts, so the
// work happens in document$.subscribe, once per page shown, and is idempotent: each
// widget is marked data-rf-mounted, and listeners of the previous page are dropped.

const SELECTOR = "[data-rf-cell], [data-rf-calc], [data-rf-quiz]";
let pageListeners = null;
let runtimeModule = null; // loaded only once a page has a widget

/**
 * Why Python's files (data-rf-sizes) should wait for the reader, or "": the browser asks to save data, or the
 * connection looks slow (Network Information API, where the browser has it; others warm as usual).
 */
function reasonToWait() {
  const connection = navigator.connection;
  if (!connection) return "";
  if (connection.saveData) return "your browser asks to save data";
  if (["slow-2g", "2g", "3g"].includes(connection.effectiveType)) return "this connection looks slow";
  return "";
}

async function setUpPage() {
  pageListeners?.abort();
  pageListeners = new AbortController();
  const { signal } = pageListeners;
  const widgets = document.querySelectorAll(SELECTOR);
  runtimeModule?.runtime.stopOrphans(); // a program left running on the page we came from
  if (document.querySelector("[data-rf-progress-home]")) {
    // The home page: each chapter's quiz progress, kept in this browser (no Python needed).
    import("./progress.mjs").then(({ showProgress }) => signal.aborted || showProgress(document, signal));
  }
  if (!widgets.length) return;
  const holdBack = reasonToWait();
  const needs = {
    cells: document.querySelector("[data-rf-cell]") !== null,
    // A quiz asks the calculators' worker, so it starts that worker too.
    calculators: document.querySelector("[data-rf-calc], [data-rf-quiz]") !== null,
  };
  const loading = import("./runtime.mjs");
  if (!holdBack) {
    // Python starts while the widgets' own modules load and mount: the worker's
    // downloads and its restore overlap the page's set-up instead of following it.
    loading.then(({ runtime }) => {
      if (signal.aborted) return;
      runtime.configureFrom(widgets[0]);
      runtime.startPage(needs);
    });
  }
  const [loaded, { mountRunCells }, { mountCalculators }, { mountQuizzes }] = await Promise.all([
    loading,
    import("./runcell.mjs"),
    import("./calculator.mjs"),
    import("./quiz.mjs"),
  ]);
  runtimeModule = loaded;
  const { runtime } = loaded;
  if (signal.aborted) return;
  mountRunCells(document, signal);
  mountCalculators(document, signal);
  mountQuizzes(document, signal);
  if (holdBack) {
    // Fetch nothing large until the reader touches a widget (Run and the calculator start it too).
    runtime.deferUntilUsed(holdBack);
    const warm = () => signal.aborted || runtime.startPage(needs);
    for (const widget of widgets) {
      for (const type of ["pointerdown", "focusin", "keydown"]) widget.addEventListener(type, warm, { signal, once: true });
    }
  }
}

if (window.document$) window.document$.subscribe(() => setUpPage());
else document.addEventListener("DOMContentLoaded", () => setUpPage());
