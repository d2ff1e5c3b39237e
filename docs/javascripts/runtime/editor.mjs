// A small Python editor: a real <textarea> (native editing, undo, selection, screen
// readers and phone keyboards all work) laid exactly over a highlighted copy of its
// text. About 4 kB instead of a CodeMirror bundle of several hundred.
//
// Keys: Tab / Shift+Tab indent and dedent; Enter keeps the indentation (one level
// more after a colon); Ctrl/Cmd+Enter runs. Escape releases Tab, so the next Tab
// moves focus on instead of indenting: the editor never traps the keyboard.

const INDENT = "    ";

const KEYWORDS = new Set(
  ("False None True and as assert async await break class continue def del elif else except finally for " +
    "from global if import in is lambda nonlocal not or pass raise return try while with yield match case")
    .split(" "),
);
const BUILTINS = new Set(
  ("abs all any bool dict enumerate float format getattr hasattr int isinstance len list max min print " +
    "range repr reversed round set sorted str sum tuple type zip Exception ValueError KeyError TypeError")
    .split(" "),
);

// One alternation, tried left to right at each position: comments, strings (triple-quoted
// first, with any prefix), numbers, names, decorators. Everything else is plain text.
//
// Every part must take time linear in what it scans, or a pasted line freezes the page on
// each keystroke. No two repeated parts of one token may match the same characters: the
// number's integer and fraction digits are split by a required ".", not an optional one
// (`\d[\d_]*\.?[\d_]*` tried every split of a 60,000-digit run, 5 s a keystroke).
const TOKEN = new RegExp(
  [
    /(#[^\n]*)/.source,
    /((?:[rRbBuUfF]{1,2})?(?:"""[\s\S]*?(?:"""|$)|'''[\s\S]*?(?:'''|$)|"(?:\\.|[^"\\\n])*"?|'(?:\\.|[^'\\\n])*'?))/.source,
    /(\b(?:0[xob][\da-f_]+|\d[\d_]*(?:\.[\d_]*)?(?:e[+-]?\d+)?j?|\.\d[\d_]*(?:e[+-]?\d+)?)\b)/.source,
    /([A-Za-z_][A-Za-z0-9_]*)/.source,
    /(@[A-Za-z_][\w.]*)/.source,
  ].join("|"),
  "gi",
);
/**
 * Characters highlighted at most; the rest is shown as plain text. A second guard beside the
 * linear pattern: what is past it costs one escape, whatever it holds.
 */
export const HIGHLIGHT_LIMIT = 50_000;
/**
 * Past this many lines (or HIGHLIGHT_LIMIT characters) the editor is a plain textarea of its own
 * height that scrolls, with no highlighted copy: the copy is laid out again on every keystroke,
 * and its cost grows with the lines (8 s a keystroke for a million blank lines).
 */
export const PLAIN_LINES = 2_000;
/**
 * The longest program the editor takes, in lines and characters. Chrome's own textarea costs
 * seconds a keystroke at a million lines, highlighted or not, so an edit past this is refused
 * with a line in the cell's status (onRefused); no program of a chapter comes near it.
 */
export const MAX_LINES = 10_000;
export const MAX_CHARS = 1_000_000;

/** Lines in `text` (newlines plus one), counted up to `stop + 1` at most. */
export function linesIn(text, stop = Infinity) {
  let count = 1;
  for (let index = text.indexOf("\n"); index !== -1 && count <= stop; index = text.indexOf("\n", index + 1)) count += 1;
  return count;
}

/**
 * Python source as tokens [[kind, text], …]: kind is a class suffix (rf-hl-KIND) or "" for
 * plain text; the texts joined are `source`. Only the first HIGHLIGHT_LIMIT characters get
 * kinds. The page makes nodes of them (paint), never markup: the source is the reader's.
 */
export function highlight(source) {
  if (source.length > HIGHLIGHT_LIMIT) {
    return [...highlight(source.slice(0, HIGHLIGHT_LIMIT)), ["", source.slice(HIGHLIGHT_LIMIT)]];
  }
  const tokens = [];
  const plain = (text) => text && tokens.push(["", text]);
  let last = 0;
  let previousName = "";
  for (const match of source.matchAll(TOKEN)) {
    const [text, comment, string, number, name, decorator] = match;
    plain(source.slice(last, match.index));
    last = match.index + text.length;
    let kind = "";
    if (comment) kind = "comment";
    else if (string) kind = "string";
    else if (number) kind = "number";
    else if (decorator) kind = "decorator";
    else if (name) {
      if (KEYWORDS.has(name)) kind = name === "True" || name === "False" || name === "None" ? "constant" : "keyword";
      else if (previousName === "def" || previousName === "class") kind = "definition";
      else if (BUILTINS.has(name)) kind = "builtin";
    }
    previousName = name || "";
    if (kind) tokens.push([kind, text]);
    else plain(text);
  }
  plain(source.slice(last));
  return tokens;
}

/** Insert text at the selection through the browser's editing, so Ctrl+Z undoes it. */
function insertText(textarea, text) {
  if (!document.execCommand?.("insertText", false, text)) {
    textarea.setRangeText(text, textarea.selectionStart, textarea.selectionEnd, "end");
    textarea.dispatchEvent(new Event("input", { bubbles: true }));
  }
}

function lineStartOf(text, index) {
  return text.lastIndexOf("\n", index - 1) + 1;
}

/** Indent (or dedent) every line the selection touches. */
function shiftLines(textarea, dedent) {
  const { value, selectionStart, selectionEnd } = textarea;
  const start = lineStartOf(value, selectionStart);
  const endIndex = selectionEnd > selectionStart && value[selectionEnd - 1] === "\n" ? selectionEnd - 1 : selectionEnd;
  const end = value.indexOf("\n", endIndex) === -1 ? value.length : value.indexOf("\n", endIndex);
  const lines = value.slice(start, end).split("\n");
  const changed = lines
    .map((line) => (dedent ? line.replace(new RegExp(`^ {1,${INDENT.length}}`), "") : INDENT + line))
    .join("\n");
  textarea.setSelectionRange(start, end);
  insertText(textarea, changed);
  textarea.setSelectionRange(start, start + changed.length);
}

/**
 * Turn `textarea` (inside `.rf-editor`, next to `.rf-editor__highlight`) into the editor.
 * `onRun` is called for Ctrl/Cmd+Enter. Returns {get value(), reset()}.
 */
export function createEditor(textarea, { onRun, onRefused = () => {} }) {
  const root = textarea.closest(".rf-editor");
  const layer = root.querySelector(".rf-editor__highlight");
  let tabReleased = false;
  let plain = false;
  const paint = () => {
    const text = textarea.value;
    const large = text.length > HIGHLIGHT_LIMIT || linesIn(text, PLAIN_LINES) > PLAIN_LINES;
    if (large !== plain) {
      plain = large;
      root.classList.toggle("rf-editor--plain", plain);
      if (plain) layer.replaceChildren();
    }
    if (plain) return;
    // The textarea shows an empty last line after a trailing newline; the copy needs a
    // character on that line to give it the same height.
    const nodes = highlight(text).map(([kind, part]) => {
      if (!kind) return document.createTextNode(part);
      const span = document.createElement("span");
      span.className = `rf-hl-${kind}`;
      span.textContent = part;
      return span;
    });
    if (text.endsWith("\n") || text === "") nodes.push(document.createTextNode(" "));
    layer.replaceChildren(...nodes);
  };
  /** Whether replacing the selection with `inserted` keeps the program within MAX_LINES and MAX_CHARS. */
  const fits = (inserted) => {
    const { value, selectionStart, selectionEnd } = textarea;
    const removed = value.slice(selectionStart, selectionEnd);
    const chars = value.length - removed.length + inserted.length;
    const lines = linesIn(value, MAX_LINES) - (linesIn(removed) - 1) + (linesIn(inserted) - 1);
    if (chars <= MAX_CHARS && lines <= MAX_LINES) return true;
    onRefused(
      `That edit would make the program ${lines > MAX_LINES ? `more than ${MAX_LINES.toLocaleString("en-US")} lines` : `${chars.toLocaleString("en-US")} characters`}` +
        `; a Run cell takes at most ${MAX_LINES.toLocaleString("en-US")} lines and ${(MAX_CHARS / 1e6).toLocaleString("en-US")} MB, so it was not made.`,
    );
    return false;
  };
  textarea.addEventListener("beforeinput", (event) => {
    if (!event.cancelable || !event.inputType.startsWith("insert")) return;
    const inserted =
      event.inputType === "insertLineBreak" || event.inputType === "insertParagraph"
        ? "\n"
        : (event.data ?? event.dataTransfer?.getData("text/plain") ?? "");
    if (!fits(inserted)) event.preventDefault();
  });
  textarea.addEventListener("input", paint);
  textarea.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      tabReleased = true;
      return;
    }
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      onRun();
      return;
    }
    if (event.key === "Tab" && !tabReleased && !event.altKey && !event.ctrlKey && !event.metaKey) {
      event.preventDefault();
      const multiLine = textarea.value.slice(textarea.selectionStart, textarea.selectionEnd).includes("\n");
      if (event.shiftKey || multiLine) shiftLines(textarea, event.shiftKey);
      else insertText(textarea, INDENT);
      return;
    }
    if (event.key === "Enter" && !event.shiftKey && !event.altKey && !event.isComposing) {
      const { value, selectionStart } = textarea;
      const line = value.slice(lineStartOf(value, selectionStart), selectionStart);
      const indent = line.match(/^[ \t]*/)[0] + (/:\s*(#.*)?$/.test(line) ? INDENT : "");
      event.preventDefault();
      if (fits("\n" + indent)) insertText(textarea, "\n" + indent);
    }
    tabReleased = false;
  });
  textarea.addEventListener("blur", () => (tabReleased = false));
  // From here the highlighted copy sets the height (rows= sized the editor before the script ran).
  textarea.rows = 1;
  root.classList.add("rf-editor--live");
  paint();
  return {
    get value() {
      return textarea.value;
    },
    reset() {
      // defaultValue is the text the page was built with: the program file itself. Replacing
      // the whole text as one edit keeps the browser's undo history whole: Ctrl+Z after Reset
      // brings back the edited program (assigning .value would leave undo a stale history).
      if (textarea.value === textarea.defaultValue) return;
      textarea.focus({ preventScroll: true });
      textarea.setSelectionRange(0, textarea.value.length);
      insertText(textarea, textarea.defaultValue);
      textarea.setSelectionRange(0, 0);
      paint();
    },
  };
}
