// Entry point, loaded on every page (mkdocs.yml extra_javascript). It does nothing on
// pages without a Run cell or calculator. On pages with one it loads the widgets and
// warms Python up in the background: once the page has loaded and the browser is
// idle, or as soon as a widget scrolls into view, whichever comes first, so a reader
// who presses Run after reading does not wait for the runtime. On Save-Data or a slow
// connection it waits instead until the reader uses a widget, and the cells say so.
//
// Material's instant navigation swaps page content without reloading scripts, so the
// work happens in document$.subscribe, once per page shown, and is idempotent: each
// widget is marked data-rf-mounted, and listeners of the previous page are dropped.

const SELECTOR = "[data-rf-cell], [data-rf-calc]";
let pageListeners = null;
let runtimeModule = null; // loaded only once a page has a widget

function whenLoadedAndIdle(callback) {
  const idle = () =>
    "requestIdleCallback" in window ? requestIdleCallback(callback, { timeout: 2000 }) : setTimeout(callback, 200);
  if (document.readyState === "complete") idle();
  else window.addEventListener("load", idle, { once: true });
}

/**
 * Why Python's 12 MB should wait for the reader, or "": the browser asks to save data, or the
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
  if (!widgets.length) return;
  const [loaded, { mountRunCells }, { mountCalculators }] = await Promise.all([
    import("./runtime.mjs"),
    import("./runcell.mjs"),
    import("./calculator.mjs"),
  ]);
  runtimeModule = loaded;
  const { runtime } = loaded;
  if (signal.aborted) return;
  mountRunCells(document, signal);
  mountCalculators(document, signal);
  const warm = () => signal.aborted || runtime.start();
  const holdBack = reasonToWait();
  if (holdBack) {
    // Fetch nothing large until the reader touches a widget (Run and the calculator start it too).
    runtime.deferUntilUsed(holdBack);
    for (const widget of widgets) {
      for (const type of ["pointerdown", "focusin", "keydown"]) widget.addEventListener(type, warm, { signal, once: true });
    }
    return;
  }
  whenLoadedAndIdle(warm);
  const observer = new IntersectionObserver(
    (entries) => {
      if (entries.some((entry) => entry.isIntersecting)) {
        observer.disconnect();
        warm();
      }
    },
    { rootMargin: "200px" },
  );
  widgets.forEach((widget) => observer.observe(widget));
  signal.addEventListener("abort", () => observer.disconnect());
}

if (window.document$) window.document$.subscribe(() => setUpPage());
else document.addEventListener("DOMContentLoaded", () => setUpPage());
