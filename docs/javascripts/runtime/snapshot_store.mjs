// The raw snapshot kept between pages of the site, in the browser's Cache API.
//
// Reading the served snapshot means downloading (or reading from the HTTP cache) the gzipped
// container, undoing gzip, checking the records' digest and rebuilding 31 MB of memory over
// pyodide.asm.wasm's data segments: most of a second chapter's boot on this machine under load,
// and nearly all of it JavaScript on the worker's own thread. The first page that restores
// Python keeps the result here; the next page (another chapter, the calculators' worker on an
// isolated page) reads it back and needs only one SHA-256 over it, which Web Crypto computes
// off the worker's thread, and no wasm bytes at all (only its compiled code).
//
// A kept copy is checked against the raw digest the page names (boot.mjs), never trusted as
// it is: anything on the site's origin can write this cache, a reader's Run program included
// (Pyodide's `js` module is the worker's global scope), and a copy that does not match is
// deleted and the snapshot read as if nothing were kept.
//
// One copy per site folder: keeping a new one deletes the others under the same folder.

const CACHE_NAME = "roofline-pyodide-snapshot";

/**
 * The kept snapshots of the site whose snapshot is at `snapshotURL`, or null where this
 * context has no Cache API (Node, a page outside https). Keys sit beside the served file,
 * so two sites on one origin do not delete each other's copy.
 */
export function keptSnapshots(snapshotURL, caches = globalThis.caches) {
  if (!caches || typeof caches.open !== "function") return null;
  const folder = new URL("raw/", new URL(snapshotURL.split("#")[0], "file:///")).href;
  const keyOf = (digest) => `${folder}${digest}`;
  const open = () => caches.open(CACHE_NAME);
  return {
    /**
     * The copy kept under `digest`, unchecked and not yet read (a Response, whose body the
     * caller reads), or null: none, or the cache failed. A lookup, not a read: quick.
     */
    async find(digest) {
      try {
        return (await (await open()).match(keyOf(digest))) ?? null;
      } catch {
        return null;
      }
    },
    /**
     * Keep `raw` under `digest`, in place of any other copy of this site. The bytes are copied
     * before this returns, so the caller may hand `raw`'s buffer on at once. Never throws.
     */
    keep(digest, raw) {
      const body = new Response(raw); // a copy: `raw` may be transferred next
      return (async () => {
        const cache = await open();
        for (const request of await cache.keys()) {
          if (request.url.startsWith(folder) && request.url !== keyOf(digest)) await cache.delete(request);
        }
        await cache.put(keyOf(digest), body);
      })().catch(() => {});
    },
    /** Delete the copy under `digest` (it did not match). Never throws. */
    forget(digest) {
      return open()
        .then((cache) => cache.delete(keyOf(digest)))
        .catch(() => {});
    },
  };
}
