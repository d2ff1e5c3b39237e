/* Interactive charts: each figure's static SVG is swapped for a vega-embed view.
 *
 * A figure is <div class="roofline-chart"> holding an <img> of NAME.svg; the
 * Vega-Lite spec is NAME.vl.json beside it. Vega, Vega-Lite and vega-embed are
 * loaded from this site, and only once a chart comes near the viewport, so
 * pages without charts (and readers who never scroll to one) never fetch them.
 * Colours come from Material's CSS variables, and the charts are drawn again
 * when the reader switches between light and dark. Without JavaScript, or if
 * anything fails, the SVG stays.
 *
 * window.rooflineCharts shares the loader and the drawing (embed: the page's colours, tap
 * tooltips) with the calculators' Vega-Lite outputs (runtime/vega.mjs), so the libraries load
 * once and both kinds of chart look and behave alike.
 */
(() => {
  "use strict";

  const VENDOR = new URL("../assets/vendor/vega/", document.currentScript.src);
  const LIBRARIES = ["vega.min.js", "vega-lite.min.js", "vega-embed.min.js"];
  const specs = new Map(); // spec URL -> promise of the parsed spec
  const views = new WeakMap(); // chart element -> its vega View, to free it before drawing again
  let libraries = null;
  let watcher = null;

  function loadScript(name) {
    return new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = new URL(name, VENDOR).href;
      script.onload = resolve;
      script.onerror = () => reject(new Error(`could not load ${script.src}`));
      document.head.appendChild(script);
    });
  }

  function loadLibraries() {
    // In order: vega-lite needs vega, vega-embed needs both.
    libraries ??= LIBRARIES.reduce((chain, name) => chain.then(() => loadScript(name)), Promise.resolve());
    return libraries;
  }

  function loadSpec(url) {
    if (!specs.has(url)) {
      specs.set(url, fetch(url).then((response) => {
        if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
        return response.json();
      }));
    }
    return specs.get(url);
  }

  /* Vega config from the page's current colours, so light and dark both read well. */
  function pageConfig() {
    const style = getComputedStyle(document.body);
    const color = (name) => style.getPropertyValue(name).trim();
    const strong = color("--md-default-fg-color");
    const muted = color("--md-default-fg-color--light");
    const faint = color("--md-default-fg-color--lightest");
    return {
      background: null,
      title: { color: strong, subtitleColor: muted },
      axis: { labelColor: muted, titleColor: strong, gridColor: faint, domainColor: muted, tickColor: muted },
      legend: { labelColor: muted, titleColor: strong },
      view: { stroke: faint },
    };
  }

  /* Break title lines into lines of at most ``limit`` characters (Vega titles do not wrap). */
  function wrap(lines, limit) {
    const out = [];
    for (const line of [].concat(lines)) {
      let current = "";
      for (const word of line.split(" ")) {
        if (current && current.length + word.length + 1 > limit) {
          out.push(current);
          current = word;
        } else {
          current = current ? `${current} ${word}` : word;
        }
      }
      if (current) out.push(current);
    }
    return out;
  }

  /* The committed spec, stretched to the column and with titles and legends fitted to its width. */
  function fitted(spec, width) {
    const copy = structuredClone(spec);
    if (copy.vconcat) {
      // Stacked panels: Vega-Lite stretches only a single or layered view to its container, so
      // each panel gets the column's width less room for its axis (about 80 px of labels and title).
      for (const panel of copy.vconcat) panel.width = Math.max(160, width - 80);
    } else {
      copy.width = "container";
      copy.autosize = { type: "fit-x", contains: "padding" };
    }
    if (copy.title && typeof copy.title === "object") {
      copy.title.text = wrap(copy.title.text, Math.max(24, Math.floor(width / 8)));
      if (copy.title.subtitle) copy.title.subtitle = wrap(copy.title.subtitle, Math.max(30, Math.floor(width / 6.5)));
    }
    const legend = copy.config?.legend;
    if (legend?.columns) legend.columns = Math.max(1, Math.min(legend.columns, Math.floor(width / 170)));
    // On a phone, stack a chart's legends under one another instead of side by side,
    // where the second one would run off the right edge.
    if (legend && width < 560) legend.layout = { bottom: { anchor: "start", direction: "vertical", margin: 4 } };
    return copy;
  }

  /* A tap gives no hover, so Vega would show no tooltip on a phone: show the tapped mark's
   * tooltip on click too (a tap on empty space hides it). */
  function showTooltipOnTap(view) {
    view.addEventListener("click", (event, item) => {
      const handler = view.tooltip();
      if (typeof handler === "function") handler.call(view, view._handler, event, item, item?.tooltip ?? null);
    });
  }

  /* The page's colour scheme now: "dark" or "light". */
  function scheme() {
    return document.body.getAttribute("data-md-color-scheme") === "slate" ? "dark" : "light";
  }

  /* Draw `spec` into `target` with vega-embed in the page's colours, tapping showing tooltips.
   * Resolves with the view and the scheme it was drawn in, read with the colours: the reader may
   * switch while it draws, and then the caller draws again (the redraw on a switch skips a chart
   * still being drawn). Figures and the calculators' charts (runtime/vega.mjs) both draw so. */
  async function embed(target, spec) {
    const drawnIn = scheme();
    const { view } = await window.vegaEmbed(target, spec, {
      actions: false,
      renderer: "svg",
      config: pageConfig(),
      tooltip: { theme: drawnIn },
    });
    showTooltipOnTap(view);
    return { view, scheme: drawnIn };
  }

  async function draw(chart) {
    const image = chart.querySelector("img");
    if (!image) return;
    const url = image.src.replace(/\.svg(\?.*)?$/, ".vl.json");
    try {
      const [spec] = await Promise.all([loadSpec(url), loadLibraries()]);
      let target = chart.querySelector(".roofline-chart__view");
      if (!target) {
        target = document.createElement("div");
        target.className = "roofline-chart__view";
        chart.appendChild(target);
      }
      views.get(chart)?.finalize();
      const drawn = await embed(target, fitted(spec, chart.clientWidth || 640));
      views.set(chart, drawn.view);
      chart.dataset.state = "interactive";
      // Which scheme this drawing is in: a redraw for a new scheme is done when this says so.
      chart.dataset.scheme = drawn.scheme;
      if (drawn.scheme !== scheme()) draw(chart); // switched while it was drawn
    } catch (error) {
      chart.dataset.state = "static";
      console.warn("chart stays static:", error);
    }
  }

  /* Draw each chart once it comes within a quarter screen of the viewport. The static SVG
     shows the same picture until then; drawing a chart (vega-embed) is a long task, which a
     reader who never scrolls that far should not pay for while the page loads. */
  function watch(charts) {
    watcher?.disconnect();
    watcher = new IntersectionObserver((entries) => {
      for (const entry of entries) {
        if (entry.isIntersecting) {
          watcher.unobserve(entry.target);
          draw(entry.target);
        }
      }
    }, { rootMargin: "25% 0px" });
    charts.forEach((chart) => watcher.observe(chart));
  }

  window.rooflineCharts = { load: loadLibraries, embed, scheme };

  /* One observer for the whole visit: the body element survives instant navigation. */
  new MutationObserver(() => {
    document.querySelectorAll('.roofline-chart[data-state="interactive"]').forEach(draw);
  }).observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });

  document$.subscribe(() => {
    // Idempotent: a chart that is loading or drawn already carries a state.
    const fresh = [...document.querySelectorAll(".roofline-chart:not([data-state])")];
    fresh.forEach((chart) => { chart.dataset.state = "pending"; });
    if (fresh.length) watch(fresh);
  });
})();
