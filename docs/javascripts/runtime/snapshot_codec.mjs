// The container the page's Pyodide memory snapshot travels in, before gzip: what
// scripts/make_snapshot.mjs writes (encodeSnapshot) and boot.mjs reads (readContainer,
// decodeSnapshot). Kept in one module so the two sides cannot drift apart.
//
// Layout: `SNAPSHOT_FORMAT\n`, one line of JSON header (`rawBytes`, `sha256`: see
// recordsDigest, and what the snapshot was made from), then records that rebuild the raw snapshot front to back, starting
// from a base image of the same length (all zeros, or the wasm module's initial memory:
// see wasm_memory.mjs and `header.base`). A record is four little-endian u32 words,
// then its literal bytes:
//   [unchanged][literal length][copy from][copy length][literal ...]
// meaning: keep `unchanged` bytes of the base as they are, then write the literal, then
// copy `copy length` bytes that were already rebuilt, starting at offset `copy from`.
//
// Why not plain gzip: Pyodide's 31 MB snapshot is two-thirds zeros, 2.7 MB of the rest
// are the wasm file's own data segments, untouched, and much of what remains repeats
// data from megabytes earlier (whole object layouts, tables). gzip spends bits on every
// zero run, cannot know what the wasm file holds, and sees repeats only within 32 KB.
// Dropping what the base already has and turning far repeats into copies first leaves
// gzip (which every browser can undo natively, with DecompressionStream) the near-range
// work it is good at.

export const SNAPSHOT_FORMAT = "roofline-pyodide-snapshot/4";
const RECORD_BYTES = 16;
/** Unchanged runs shorter than this stay in the literal (a record costs 16 bytes). */
const MIN_UNCHANGED = 32;
/** Repeats are found through aligned blocks of this many bytes. */
const BLOCK = 32;
/** A copy must save more than gzip would by itself: long, and farther back than its window. */
const MIN_COPY = 64;
const GZIP_WINDOW = 32768;
const HASH_BASE = 0x01000193;

/** HASH_BASE ** (BLOCK - 1), modulo 2 ** 32: the weight of the byte that leaves the window. */
const LEAVING_WEIGHT = (() => {
  let weight = 1;
  for (let i = 1; i < BLOCK; i += 1) weight = Math.imul(weight, HASH_BASE);
  return weight;
})();

function blockHash(raw, at) {
  let hash = 0;
  for (let i = at; i < at + BLOCK; i += 1) hash = (Math.imul(hash, HASH_BASE) + raw[i]) | 0;
  return hash;
}

function isZeroBlock(raw, at) {
  for (let i = at; i < at + BLOCK; i += 1) if (raw[i] !== 0) return false;
  return true;
}

function concat(parts) {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

function withHeader(header, records) {
  return concat([new TextEncoder().encode(`${SNAPSHOT_FORMAT}\n${JSON.stringify(header)}\n`), records]);
}

/**
 * The container for `raw` (a Uint8Array) with `header` (JSON-able; `rawBytes` is added),
 * rebuilt from `base` (a Uint8Array as long as `raw`; all zeros when null).
 * One pass: a rolling hash of the BLOCK bytes at each position is looked up among the
 * aligned blocks already passed; a verified hit is extended both ways into a copy.
 */
export function encodeSnapshot(raw, header, base = null) {
  if (base && base.length !== raw.length) throw new Error("the base image must be as long as the snapshot");
  const start = base ?? new Uint8Array(raw.length);
  const parts = [];
  const seen = new Map(); // block hash -> offset of the first aligned block with it
  let indexed = 0; // aligned blocks below this offset are in `seen`
  let unchanged = 0; // bytes of the base to keep before the next literal
  let literalStart = 0;

  const emit = (literalEnd, copyFrom, copyLength) => {
    const record = new DataView(new ArrayBuffer(RECORD_BYTES));
    record.setUint32(0, unchanged, true);
    record.setUint32(4, literalEnd - literalStart, true);
    record.setUint32(8, copyFrom, true);
    record.setUint32(12, copyLength, true);
    parts.push(new Uint8Array(record.buffer), raw.subarray(literalStart, literalEnd));
  };

  let i = 0;
  let hash = 0;
  let hashAt = -1; // the position `hash` is for
  while (i < raw.length) {
    if (raw[i] === start[i]) {
      let end = i;
      while (end < raw.length && raw[end] === start[end]) end += 1;
      if (end - i >= MIN_UNCHANGED || end === raw.length) {
        emit(i, 0, 0);
        unchanged = end - i;
        literalStart = end;
        i = end;
        continue;
      }
    }
    if (i + BLOCK > raw.length) {
      i += 1;
      continue;
    }
    for (; indexed + BLOCK <= i; indexed += BLOCK) {
      if (isZeroBlock(raw, indexed)) continue;
      const key = blockHash(raw, indexed);
      if (!seen.has(key)) seen.set(key, indexed);
    }
    if (hashAt === i - 1) {
      hash = (Math.imul(hash - Math.imul(raw[i - 1], LEAVING_WEIGHT), HASH_BASE) + raw[i + BLOCK - 1]) | 0;
    } else {
      hash = blockHash(raw, i);
    }
    hashAt = i;
    const from = seen.get(hash);
    if (from !== undefined && i - from > GZIP_WINDOW) {
      let length = 0;
      // Forward, but never past what the decoder will have rebuilt when it copies.
      while (i + length < raw.length && from + length < i && raw[from + length] === raw[i + length]) length += 1;
      let copyStart = i;
      let source = from;
      while (copyStart > literalStart && source > 0 && raw[source - 1] === raw[copyStart - 1]) {
        copyStart -= 1;
        source -= 1;
      }
      // The decoder copies from what it has rebuilt, so the source ends where the copy starts.
      length = Math.min(length + (i - copyStart), copyStart - source);
      if (length >= MIN_COPY) {
        emit(copyStart, source, length);
        unchanged = 0;
        literalStart = copyStart + length;
        i = literalStart;
        continue;
      }
    }
    i += 1;
  }
  emit(raw.length, 0, 0);
  return withHeader({ ...header, rawBytes: raw.length }, concat(parts));
}

/**
 * encodeSnapshot's container with `sha256` (recordsDigest) in its header: what the build
 * serves, and what boot.mjs restores only once the digest matches.
 */
export async function sealedSnapshot(raw, header, base = null) {
  const unsealed = encodeSnapshot(raw, header, base);
  const { header: full, recordsAt } = readContainer(unsealed);
  const records = unsealed.subarray(recordsAt);
  return withHeader({ ...full, sha256: await recordsDigest(full, records) }, records);
}

/**
 * The hex SHA-256 of `bytes`, by Web Crypto (native, in the browser and in Node). The
 * restore checks the rebuilt snapshot against the header's before Python sees a byte of
 * it: memory that is well-formed but wrong can spin Python forever, or quietly change
 * every number (a tampered spec value). Web Crypto exists only in a secure context
 * (https, or http on this machine); elsewhere the snapshot cannot be checked, so it is
 * not used.
 */
export async function sha256Hex(bytes) {
  const subtle = globalThis.crypto?.subtle;
  if (!subtle) throw new Error("this page cannot check the snapshot (no Web Crypto outside https)");
  const digest = new Uint8Array(await subtle.digest("SHA-256", bytes));
  return Array.from(digest, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/**
 * The hex SHA-256 of a container's records and of the header fields that decide how they
 * are rebuilt (the format, the raw size, the base image's place and digest). It fixes the
 * raw snapshot as surely as a digest of the raw bytes would (the records rebuild it over
 * a base the header's own digest ties to the wasm), and costs a third as much to check:
 * 9.5 MB of records against 31.5 MB of memory.
 */
export async function recordsDigest(header, records) {
  const binding = `${SNAPSHOT_FORMAT}\n${header.rawBytes}\n${header.base?.at ?? ""}\n${header.base?.digest ?? ""}\n`;
  return sha256Hex(concat([new TextEncoder().encode(binding), records]));
}

/** The container's header and where its records start; throws unless it is one. */
export function readContainer(bytes) {
  const formatEnd = bytes.indexOf(10);
  const headerEnd = formatEnd < 0 ? -1 : bytes.indexOf(10, formatEnd + 1);
  const text = new TextDecoder();
  if (headerEnd < 0 || text.decode(bytes.subarray(0, formatEnd)) !== SNAPSHOT_FORMAT) {
    throw new Error("the snapshot file is not one this page can read");
  }
  return { header: JSON.parse(text.decode(bytes.subarray(formatEnd + 1, headerEnd))), recordsAt: headerEnd + 1 };
}

/**
 * The raw snapshot the container `bytes` holds, rebuilt over `base` (the image it was
 * encoded against, as long as the snapshot; all zeros when null), which it takes over
 * and changes in place. Throws if any record is out of bounds.
 */
export function decodeSnapshot(bytes, base = null) {
  const { header, recordsAt } = readContainer(bytes);
  if (base && base.length !== header.rawBytes) throw new Error("the snapshot's base image has the wrong length");
  const raw = base ?? new Uint8Array(header.rawBytes); // unchanged runs cost nothing
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = recordsAt;
  let out = 0;
  const broken = () => new Error("the snapshot file is incomplete");
  while (at + RECORD_BYTES <= bytes.length) {
    out += view.getUint32(at, true);
    const literal = view.getUint32(at + 4, true);
    const from = view.getUint32(at + 8, true);
    const copy = view.getUint32(at + 12, true);
    at += RECORD_BYTES;
    if (at + literal > bytes.length || out + literal + copy > raw.length || from + copy > out + literal) throw broken();
    raw.set(bytes.subarray(at, at + literal), out);
    at += literal;
    out += literal;
    raw.copyWithin(out, from, from + copy);
    out += copy;
  }
  if (at !== bytes.length || out !== raw.length) throw broken();
  return raw;
}
