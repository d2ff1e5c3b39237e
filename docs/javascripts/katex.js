/* Render the formulas that pymdownx.arithmatex marks, with the KaTeX the site serves itself.
 * Runs on every page Material shows, including after instant navigation; rendering
 * replaces the delimiters, so a second call on the same page finds nothing to do. */
document$.subscribe(({ body }) => {
  for (const element of body.querySelectorAll(".arithmatex")) {
    renderMathInElement(element, {
      delimiters: [
        { left: "\\(", right: "\\)", display: false },
        { left: "\\[", right: "\\]", display: true },
      ],
      throwOnError: false,
    });
  }
});
