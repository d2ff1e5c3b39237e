/* Regions that scroll sideways (wide tables, long formulas, a Run cell's printed
 * table) on a narrow screen.
 *
 * Such a region is easy to miss and, without focus, cannot be scrolled from the
 * keyboard. Each one that actually overflows gets tabindex="0", a role and a name,
 * and data-rf-scrolls="more" while content lies beyond its right edge (course.css
 * fades that edge); a table also gets a one-line hint under it. Regions that fit
 * are left alone, and the marks follow the width as the window is resized.
 */
(() => {
  "use strict";

  const REGIONS = ".md-typeset__scrollwrap, .md-typeset div.arithmatex, .rf-output";
  // A Run cell's output pane is already a focusable, named log (scripts/sitegen/widgets.py):
  // it only gets the fade and the hint, and its content changes as a program prints.
  const OUTPUT = ".rf-output";
  const HINTS = { ".md-typeset__scrollwrap": "table", ".rf-output": "output" };
  // Watch the region and its content: a web font arriving later can widen a formula.
  // A printed line that Reset has removed reports its last resize detached, outside any region.
  const observer = new ResizeObserver((entries) =>
    entries.forEach((entry) => {
      const region = entry.target.closest("[data-rf-watched]");
      if (region) mark(region);
    }));

  function label(region) {
    if (region.matches(".arithmatex")) return "Formula, scrolls sideways";
    const caption = region.querySelector("caption, th");
    return caption ? `Table (${caption.textContent.trim()} …), scrolls sideways` : "Table, scrolls sideways";
  }

  function mark(region) {
    // A region the browser is skipping (content-visibility: auto, off screen) has no laid-out
    // width to measure; it is measured when it is shown (see watch).
    if (region.checkVisibility && !region.checkVisibility({ contentVisibilityAuto: true })) return;
    const overflows = region.scrollWidth > region.clientWidth + 1;
    const hint = region.nextElementSibling?.classList.contains("rf-scroll-hint") ? region.nextElementSibling : null;
    const owned = !region.matches(OUTPUT); // whose focus, role and name this script sets
    if (!overflows) {
      if (owned) {
        region.removeAttribute("tabindex");
        region.removeAttribute("role");
        region.removeAttribute("aria-label");
      }
      region.removeAttribute("data-rf-scrolls");
      hint?.remove();
      return;
    }
    if (owned) {
      region.tabIndex = 0;
      region.setAttribute("role", "region");
      region.setAttribute("aria-label", label(region));
    }
    const atEnd = region.scrollLeft + region.clientWidth >= region.scrollWidth - 1;
    region.dataset.rfScrolls = atEnd ? "end" : "more";
    const what = Object.entries(HINTS).find(([selector]) => region.matches(selector))?.[1];
    if (!hint && what) {
      const text = document.createElement("p");
      text.className = "rf-scroll-hint";
      text.textContent = `Swipe or scroll the ${what} sideways for more columns →`;
      region.after(text);
    }
  }

  // Printed output widens the pane without resizing it: re-measure once per frame after it
  // changes, and again when a new block of lines is laid out (a block that content-visibility
  // still skips has no width yet; the resize observer sees it take its real one).
  const printed = new MutationObserver((records) => {
    const panes = new Set();
    for (const record of records) {
      panes.add(record.target.closest?.(OUTPUT) ?? record.target.parentElement?.closest(OUTPUT));
      for (const node of record.addedNodes) if (node.nodeType === Node.ELEMENT_NODE) observer.observe(node);
    }
    requestAnimationFrame(() => panes.forEach((pane) => pane && mark(pane)));
  });

  // Measuring a region lays it out: wait until it comes near the screen, so regions far
  // below (which course.css lets the browser skip) cost nothing while the page loads.
  // The rest are measured one at a time when the browser is idle, in short tasks that never
  // hold up the page, so keyboard access does not wait for the reader to scroll.
  function watch(region) {
    if (region.dataset.rfWatched !== "pending") return;
    region.dataset.rfWatched = "1";
    nearby.unobserve(region);
    region.addEventListener("scroll", () => mark(region), { passive: true });
    region.addEventListener("contentvisibilityautostatechange", (event) => event.skipped || mark(region));
    observer.observe(region);
    if (region.firstElementChild) observer.observe(region.firstElementChild);
    if (region.matches(OUTPUT)) printed.observe(region, { childList: true, subtree: true, characterData: true });
  }

  const nearby = new IntersectionObserver((entries) => {
    entries.filter((entry) => entry.isIntersecting).forEach((entry) => watch(entry.target));
  }, { rootMargin: "50% 0px" });

  const idle = window.requestIdleCallback ?? ((callback) => setTimeout(callback, 200));

  function watchWhenIdle(queue) {
    if (!queue.length) return;
    idle(() => {
      if (queue[0].isConnected) watch(queue[0]);
      watchWhenIdle(queue.slice(1));
    }, { timeout: 2000 });
  }

  document$.subscribe(() => {
    // After Material has wrapped the tables (it does so on the same signal).
    requestAnimationFrame(() => {
      const fresh = [...document.querySelectorAll(REGIONS)].filter((region) => !region.dataset.rfWatched);
      for (const region of fresh) {
        region.dataset.rfWatched = "pending";
        nearby.observe(region);
      }
      watchWhenIdle(fresh);
    });
  });
})();
