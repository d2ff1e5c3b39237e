// The reader's own GPUs and models ("Your GPU…", "Your model…" under a calculator's menus):
// kept in this browser's localStorage, never in a link. A link names one by its id, "own-"
// and a short hash of its text (roofline.forms.OWN_ID), so a shared link says which entry was
// chosen without carrying it; a browser that does not hold that hash says so and shows the
// default. Python reads the text (roofline.ownspecs.own_entry) with every calculation that
// uses it; this file only keeps it, names it and hashes it.

const STORE_KEY = "roofline.own.v1";
// Entries kept per kind, newest first: older ones are dropped so the store stays small
// (a config is a few kB; localStorage holds about 5 MB per site).
const KEEP = 12;
const NAME_LENGTH = 80;
export const OWN_ID = /^own-[0-9a-f]{8}$/;
export const KIND_WORDS = { gpu: "GPU", model: "model" };

const isObject = (value) => typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * "own-" and 8 hex digits: FNV-1a (32 bits) over the text's UTF-16 code units. It tells apart
 * the few entries one reader keeps; it is no secret and no checksum against tampering (the text
 * itself is read by the package, with its checks, every time).
 */
export function ownId(text) {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index += 1) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return `own-${hash.toString(16).padStart(8, "0")}`;
}

// What load() last read, until this page stores an entry or another tab does (the storage event).
let cached = null;
globalThis.addEventListener?.("storage", () => (cached = null));

/** Everything stored, as {gpu: {id: entry}, model: {...}}; anything malformed is left out. */
function load() {
  cached ??= read();
  return structuredClone(cached);
}

function read() {
  let data;
  try {
    data = JSON.parse(localStorage.getItem(STORE_KEY) ?? "{}");
  } catch {
    return {}; // no storage (a private window, a policy) or unreadable text: nothing is kept
  }
  const found = {};
  for (const kind of Object.keys(KIND_WORDS)) {
    found[kind] = {};
    const entries = isObject(data) && isObject(data[kind]) ? data[kind] : {};
    for (const [id, entry] of Object.entries(entries)) {
      if (!OWN_ID.test(id) || !isObject(entry) || typeof entry.text !== "string") continue;
      const name = typeof entry.name === "string" ? entry.name.slice(0, NAME_LENGTH) : id;
      found[kind][id] = { id, name, text: entry.text, saved: Number.isFinite(entry.saved) ? entry.saved : 0 };
    }
  }
  return found;
}

/** The `kind` entries kept here, newest first: [{id, name, text, saved}]. */
export function stored(kind) {
  return Object.values(load()[kind] ?? {}).sort((a, b) => b.saved - a.saved);
}

/** The `kind` entry `id`, or null if this browser does not hold it. */
export function recall(kind, id) {
  return load()[kind]?.[id] ?? null;
}

/** Whether `error` is the browser saying the site's storage is full (names differ by browser). */
function isQuotaError(error) {
  return (
    error?.name === "QuotaExceededError" ||
    error?.name === "NS_ERROR_DOM_QUOTA_REACHED" ||
    error?.code === 22 ||
    error?.code === 1014
  );
}

/** The oldest kept entry of any kind in `data` other than `kind`'s `id`, as [kind, id], or null. */
function oldestOther(data, kind, id) {
  let found = null;
  let saved = Infinity;
  for (const [other, entries] of Object.entries(data)) {
    for (const [key, entry] of Object.entries(entries)) {
      if ((other !== kind || key !== id) && entry.saved < saved) {
        found = [other, key];
        saved = entry.saved;
      }
    }
  }
  return found;
}

/**
 * Keep `text` as the `kind` entry `id` called `name` (what the package named it). When the
 * site's storage is full, the oldest kept entries (of either kind) go, one at a time, until the
 * new one fits. Returns "" or, when the browser keeps nothing (storage off, or full even with
 * none of ours left), why: the entry still works on this page until it is left.
 */
export function remember(kind, id, name, text) {
  const data = load();
  const entries = data[kind] ?? {};
  entries[id] = { name: String(name).slice(0, NAME_LENGTH), text, saved: Date.now() };
  const newest = Object.entries(entries)
    .sort(([, a], [, b]) => b.saved - a.saved)
    .slice(0, KEEP);
  data[kind] = Object.fromEntries(newest.map(([key, entry]) => [key, { name: entry.name, text: entry.text, saved: entry.saved }]));
  cached = null;
  for (;;) {
    try {
      localStorage.setItem(STORE_KEY, JSON.stringify(data));
      return "";
    } catch (error) {
      if (!isQuotaError(error)) {
        return "This browser keeps no storage for this site, so it is used on this page only.";
      }
      const oldest = oldestOther(data, kind, id);
      if (!oldest) {
        return "This browser's storage for this site is full, so it is used on this page only.";
      }
      delete data[oldest[0]][oldest[1]];
    }
  }
}

/**
 * The text the typed numbers of `panel` (a .rf-own details element) stand for: its base
 * (data-rf-own-base) with each number, times its scale, under its key (a dotted key nests).
 * Returns {text} or {error} naming the first required box left empty.
 */
export function typedText(panel) {
  const config = JSON.parse(panel.dataset.rfOwnBase || "{}");
  for (const input of panel.querySelectorAll("[data-rf-own-key]")) {
    const label = panel.querySelector(`label[for="${input.id}"]`)?.textContent ?? input.dataset.rfOwnKey;
    if (input.value.trim() === "") {
      if ("rfOwnRequired" in input.dataset) return { error: `${label} (${input.dataset.rfOwnKey}) is empty.` };
      continue;
    }
    const value = Number(input.value);
    if (!Number.isFinite(value)) return { error: `${label} (${input.dataset.rfOwnKey}) must be a number.` };
    const scaled = value * Number(input.dataset.rfOwnScale || 1);
    const path = input.dataset.rfOwnKey.split(".");
    let node = config;
    for (const part of path.slice(0, -1)) node = node[part] ??= {};
    node[path.at(-1)] = Number.isInteger(value) && Number(input.dataset.rfOwnScale || 1) === 1 ? value : scaled;
  }
  return { text: JSON.stringify(config, null, 2) };
}
