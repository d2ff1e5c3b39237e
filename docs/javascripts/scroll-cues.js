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

  // A block of code scrolls in its <pre> where the page's Markdown is not Material's own (the
  // notebook page's cells, as nbconvert writes them); Material's code blocks scroll in <code>.
  const REGIONS = ".md-typeset__scrollwrap, .md-typeset div.arithmatex, .rf-output, .md-typeset pre";
  // A Run cell's output pane is already a focusable, named log (scripts/sitegen/widgets.py):
  // it only gets the fade and the hint, and its content changes as a program prints.
  const OUTPUT = ".rf-output";
  const HINTS = { ".md-typeset__scrollwrap": "table", ".rf-output": "output" };
  // Watch the region and its content: a web font arriving later can widen a formula.
  // A block of printed lines that a re-run has since removed is no longer in any region:
  // it is let go of instead of measured.
  const observer = new ResizeObserver((entries) => {
    const regions = new Set();
    for (const entry of entries) {
      const region = entry.target.isConnected ? entry.target.closest("[data-rf-watched]") : null;
      if (region) regions.add(region);
      else observer.unobserve(entry.target);
    }
    markAll(regions);
  });

  function label(region, measured = true) {
    const scrolls = measured ? ", scrolls sideways" : "";
    if (region.matches(".arithmatex")) return `Formula${scrolls}`;
    if (region.matches("pre")) return `Code${scrolls}`;
    const caption = region.querySelector("caption, th");
    return caption ? `Table (${caption.textContent.trim()} …)${scrolls}` : `Table${scrolls}`;
  }

  function focusable(region, name) {
    region.tabIndex = 0;
    region.setAttribute("role", "region");
    region.setAttribute("aria-label", name);
  }

  // Which regions the browser is skipping (content-visibility: auto, far from the screen), as its
  // own events say. Asking instead (a width, or even checkVisibility on the content) makes it style
  // or lay the region out, and the pages are cheap to open because nothing does that.
  const skippedRegions = new WeakSet();
  const shownRegions = new WeakSet();
  document.addEventListener(
    "contentvisibilityautostatechange",
    (event) => {
      if (event.skipped) skippedRegions.add(event.target);
      else {
        skippedRegions.delete(event.target);
        shownRegions.add(event.target);
      }
    },
    true,
  );

  // A region whose first state the script did not see (it can start after the first paint) is
  // taken as skipped when it lies far from the screen and the stylesheet lets the browser skip it.
  const near = new WeakSet();

  function skipped(region) {
    if (skippedRegions.has(region)) return true;
    if (near.has(region) || shownRegions.has(region)) return false;
    return getComputedStyle(region).contentVisibility === "auto";
  }

  /**
   * What the page says about `region` now: skipped, or whether it overflows and is scrolled to
   * its end. Reads only: see markAll.
   */
  function measure(region) {
    if (skipped(region)) return { region, skipped: true };
    const overflows = region.scrollWidth > region.clientWidth + 1;
    const atEnd = region.scrollLeft + region.clientWidth >= region.scrollWidth - 1;
    return { region, skipped: false, overflows, atEnd };
  }

  function mark(region) {
    markAll([region]);
  }

  /**
   * Measure every region first, then mark them: a write (a tabindex, a hint) between two
   * measurements would make the browser style and lay the page out again for the second, and
   * the resize observer hands over many regions at once while the page loads.
   */
  function markAll(regions) {
    const measured = [...regions].filter((region) => region.isConnected).map(measure);
    measured.forEach(apply);
  }

  function apply({ region, skipped: isSkipped, overflows, atEnd }) {
    const hint = region.nextElementSibling?.classList.contains("rf-scroll-hint") ? region.nextElementSibling : null;
    const owned = !region.matches(OUTPUT); // whose focus, role and name this script sets
    if (isSkipped) {
      // Its width is unknown until it is shown, and it must take keyboard focus before the
      // reader scrolls to it: focusable until then, measured when shown (see watch).
      if (owned && !region.hasAttribute("tabindex")) focusable(region, label(region, false));
      return;
    }
    if (!overflows) {
      if (owned && document.activeElement === region) return; // not while the reader is on it
      if (owned) {
        region.removeAttribute("tabindex");
        region.removeAttribute("role");
        region.removeAttribute("aria-label");
      }
      region.removeAttribute("data-rf-scrolls");
      hint?.remove();
      return;
    }
    if (owned) focusable(region, label(region));
    region.dataset.rfScrolls = atEnd ? "end" : "more";
    const what = Object.entries(HINTS).find(([selector]) => region.matches(selector))?.[1];
    if (!hint && what) {
      const text = document.createElement("p");
      text.className = "rf-scroll-hint";
      text.textContent = `Swipe or scroll the ${what} sideways for more columns →`;
      region.after(text);
    }
  }

  // Printed output widens the pane without resizing it: re-measure once per frame after a block
  // of lines comes or goes, and whenever a block's size changes (the resize observer watches each
  // block: text added to a block's last line widens it, and a block that content-visibility still
  // skips has no width yet until it is laid out). Only the pane's own children are watched, not
  // its subtree: a record and an observed element per span (a run of one stream) cost a flood
  // that switches between stdout and stderr seconds of main thread per frame.
  const printed = new MutationObserver((records) => {
    const panes = new Set();
    for (const record of records) {
      panes.add(record.target);
      for (const node of record.addedNodes) if (node.nodeType === Node.ELEMENT_NODE) observer.observe(node);
      for (const node of record.removedNodes) if (node.nodeType === Node.ELEMENT_NODE) observer.unobserve(node);
    }
    requestAnimationFrame(() => markAll(panes));
  });

  // Measuring a region lays it out: wait until it comes near the screen, so regions far
  // below (which course.css lets the browser skip) cost nothing while the page loads.
  // The rest are watched when the browser is idle, a few in each idle period (as many as
  // its deadline allows; under load, when the wait times out, a short batch), so keyboard
  // access does not wait for the reader to scroll; their first measurements then arrive
  // together in one resize-observer callback and cost one layout between them.
  function watch(region) {
    if (region.dataset.rfWatched !== "pending") return;
    region.dataset.rfWatched = "1";
    nearby.unobserve(region);
    region.addEventListener("scroll", () => mark(region), { passive: true });
    region.addEventListener("blur", () => mark(region));
    region.addEventListener("contentvisibilityautostatechange", (event) => event.skipped || mark(region));
    observer.observe(region);
    if (region.firstElementChild) observer.observe(region.firstElementChild);
    if (region.matches(OUTPUT)) printed.observe(region, { childList: true });
  }

  const nearby = new IntersectionObserver((entries) => {
    entries.filter((entry) => entry.isIntersecting).forEach((entry) => {
      near.add(entry.target);
      watch(entry.target);
    });
  }, { rootMargin: "50% 0px" });

  const idle = window.requestIdleCallback ?? ((callback) => setTimeout(callback, 200));

  const BATCH_WHEN_LATE = 8; // regions watched in one go when the idle wait timed out

  function watchWhenIdle(queue) {
    if (!queue.length) return;
    idle((deadline) => {
      let done = 0;
      do {
        const region = queue[done++];
        if (region.isConnected) watch(region);
      } while (
        done < queue.length &&
        (deadline?.didTimeout ? done < BATCH_WHEN_LATE : (deadline?.timeRemaining() ?? 0) > 4)
      );
      watchWhenIdle(queue.slice(done));
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
