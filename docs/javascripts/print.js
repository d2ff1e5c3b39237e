// Printing a chapter shows its self-check answers: every folded <details> opens before the
// browser lays out the printed pages, and the ones the reader had closed fold again after.
// (The print stylesheet cannot open them: a closed <details> keeps its content out of the
// layout whatever the CSS says in most browsers.)
(function () {
  let opened = [];
  window.addEventListener("beforeprint", function () {
    opened = Array.from(document.querySelectorAll("details:not([open])"));
    opened.forEach(function (details) { details.open = true; });
  });
  window.addEventListener("afterprint", function () {
    opened.forEach(function (details) { details.open = false; });
    opened = [];
  });
})();
