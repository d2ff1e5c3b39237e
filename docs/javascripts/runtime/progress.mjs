// Quiz progress, kept in this browser only (localStorage): per chapter, how many questions the
// reader has checked (attempted) and how many of those they got right. Nothing is sent anywhere.
//
// The stored value is read as untrusted: anything on the site's origin (a reader's Run included)
// can write it, and a reader can edit it. Only {slug: {attempted, right}} with a chapter slug's
// alphabet and whole counts (0 <= right <= attempted <= MAX_COUNT) is used; anything else is
// ignored and the key removed, so the next answer starts a clean record.

export const PROGRESS_KEY = "roofline-quiz-progress";
const MAX_COUNT = 1_000_000;
const SLUG = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

const isCount = (value) => Number.isSafeInteger(value) && value >= 0 && value <= MAX_COUNT;

function storage() {
  try {
    return window.localStorage;
  } catch {
    return null; // storage blocked (a sandboxed frame, a privacy setting): progress is not kept
  }
}

/** `value` as a progress record, or null if any part of it is not one. */
function checked(value) {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  const record = Object.create(null);
  for (const [slug, entry] of Object.entries(value)) {
    if (!SLUG.test(slug) || slug.length > 80) return null;
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) return null;
    const keys = Object.keys(entry).sort().join(",");
    const { attempted, right } = entry;
    if (keys !== "attempted,right" || !isCount(attempted) || !isCount(right) || right > attempted) return null;
    record[slug] = { attempted, right };
  }
  return record;
}

/** Every chapter's progress; a tampered or unreadable value is removed and reads as none. */
export function readProgress() {
  const store = storage();
  if (!store) return Object.create(null);
  let text = null;
  try {
    text = store.getItem(PROGRESS_KEY);
  } catch {
    return Object.create(null);
  }
  if (text === null) return Object.create(null);
  let record = null;
  try {
    record = checked(JSON.parse(text));
  } catch {
    record = null;
  }
  if (record) return record;
  try {
    store.removeItem(PROGRESS_KEY);
  } catch {
    // nothing to mend
  }
  return Object.create(null);
}

/** Count one checked question of chapter `slug` (`attempted`), and whether it was right. */
export function recordAnswer(slug, { attempted = 0, right = 0 }) {
  if (!SLUG.test(slug)) return null;
  const record = readProgress();
  const entry = record[slug] ?? { attempted: 0, right: 0 };
  entry.attempted = Math.min(MAX_COUNT, entry.attempted + attempted);
  entry.right = Math.min(entry.attempted, entry.right + right);
  record[slug] = entry;
  try {
    storage()?.setItem(PROGRESS_KEY, JSON.stringify(record));
  } catch {
    // storage full or blocked: the count lasts for this page only
  }
  return entry;
}

/** Forget every chapter's progress. */
export function clearProgress() {
  try {
    storage()?.removeItem(PROGRESS_KEY);
  } catch {
    // nothing stored
  }
}

/** "2 of 3 right", the words a chapter's progress is shown in, or "" for none. */
export function progressWords(entry) {
  if (!entry || !entry.attempted) return "";
  const questions = entry.attempted === 1 ? "question" : "questions";
  return `Quiz: ${entry.right} of ${entry.attempted} ${questions} right`;
}

/** The chapter slug a link of the home page's list points to, or "". */
function chapterOf(link) {
  const match = /(?:^|\/)chapters\/([a-z0-9-]+)\/(?:index\.html)?$/.exec(new URL(link.href, location.href).pathname);
  return match ? match[1] : "";
}

/**
 * The home page ([data-rf-progress-home]): each chapter's progress after its entry in the list of
 * chapters, and "Clear my quiz progress", shown while there is any.
 */
export function showProgress(container, signal) {
  const home = container.querySelector("[data-rf-progress-home]");
  if (!home) return;
  const list = home.previousElementSibling?.tagName === "OL" ? home.previousElementSibling : null;
  const status = home.querySelector("[data-rf-progress-status]");
  const paint = () => {
    const record = readProgress();
    let any = false;
    for (const item of list ? list.children : []) {
      const link = item.querySelector("a[href]");
      const slug = link ? chapterOf(link) : "";
      let count = item.querySelector(".rf-progress__count");
      const words = slug ? progressWords(record[slug]) : "";
      if (!words) {
        count?.remove();
        continue;
      }
      if (!count) {
        count = document.createElement("span");
        count.className = "rf-progress__count";
        link.after(count);
      }
      count.textContent = ` (${words})`;
      any = true;
    }
    home.hidden = !any && !status?.textContent;
    // Painted at least once: the stored value has been read (and removed if tampered). The element
    // starts hidden in the page's HTML, so "hidden" alone cannot say the record was read yet.
    home.setAttribute("data-rf-progress-painted", "");
  };
  paint();
  home.querySelector("[data-rf-progress-clear]")?.addEventListener(
    "click",
    () => {
      clearProgress();
      if (status) status.textContent = "Your quiz progress is cleared.";
      paint();
    },
    { signal },
  );
}
