/* Regions that scroll sideways (wide tables, long formulas) on a narrow screen.
 *
 * Such a region is easy to miss and, without focus, cannot be scrolled from the
 * keyboard. Each one that actually overflows gets tabindex="0", a role and a name,
 * and data-rf-scrolls="more" while content lies beyond its right edge (course.css
 * fades that edge); a table also gets a one-line hint under it. Regions that fit
 * are left alone, and the marks follow the width as the window is resized.
 */
(() => {
  "use strict";

  const REGIONS = ".md-typeset__scrollwrap, .md-typeset div.arithmatex";
  // Watch the region and its content: a web font arriving later can widen a formula.
  const observer = new ResizeObserver((entries) =>
    entries.forEach((entry) => mark(entry.target.closest("[data-rf-watched]"))));

  function label(region) {
    if (region.matches(".arithmatex")) return "Formula, scrolls sideways";
    const caption = region.querySelector("caption, th");
    return caption ? `Table (${caption.textContent.trim()} …), scrolls sideways` : "Table, scrolls sideways";
  }

  function mark(region) {
    const overflows = region.scrollWidth > region.clientWidth + 1;
    const hint = region.nextElementSibling?.classList.contains("rf-scroll-hint") ? region.nextElementSibling : null;
    if (!overflows) {
      region.removeAttribute("tabindex");
      region.removeAttribute("role");
      region.removeAttribute("aria-label");
      region.removeAttribute("data-rf-scrolls");
      hint?.remove();
      return;
    }
    region.tabIndex = 0;
    region.setAttribute("role", "region");
    region.setAttribute("aria-label", label(region));
    const atEnd = region.scrollLeft + region.clientWidth >= region.scrollWidth - 1;
    region.dataset.rfScrolls = atEnd ? "end" : "more";
    if (!hint && region.matches(".md-typeset__scrollwrap")) {
      const text = document.createElement("p");
      text.className = "rf-scroll-hint";
      text.textContent = "Swipe or scroll the table sideways for more columns →";
      region.after(text);
    }
  }

  document$.subscribe(() => {
    // After Material has wrapped the tables (it does so on the same signal).
    requestAnimationFrame(() => {
      for (const region of document.querySelectorAll(REGIONS)) {
        if (region.dataset.rfWatched) continue;
        region.dataset.rfWatched = "1";
        region.addEventListener("scroll", () => mark(region), { passive: true });
        observer.observe(region);
        if (region.firstElementChild) observer.observe(region.firstElementChild);
        mark(region);
      }
    });
  });
})();
