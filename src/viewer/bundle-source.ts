// A debug bundle (zip) opened in the browser, without a daemon: the central directory is read from
// the file's end, each entry is read by slices of the File (never the whole zip in memory) and
// inflated by fflate in small steps, so a zip bomb is stopped by a byte bound before it can grow.
// events.ndjson is parsed line by line up to the viewer's event cap; a malformed line is skipped and
// counted, a missing or hostile file is a clear message, never a hang.
import { Inflate } from 'fflate'
import { mapBundleStacks } from './bundle-maps.js'
import type { Envelope } from './model.js'
import type { FramePage, FrameQuery, RecordingFrame, RecordingSource } from './model/recording.js'

/** Events kept at most (the live viewer's cap). */
export const BUNDLE_MAX_EVENTS = 200_000
/** Text of events.ndjson read at most (the events kept are bounded by this too). */
export const BUNDLE_MAX_EVENT_BYTES = 512 * 1024 * 1024
/** One line of events.ndjson at most (an envelope is at most a few MiB). */
export const BUNDLE_MAX_LINE_CHARS = 16 * 1024 * 1024
/** manifest.json, frames/index.json, one frame image at most, inflated. */
export const BUNDLE_MAX_SMALL_FILE = 64 * 1024 * 1024
/** Central directory at most (a bundle has a few files per screenshot and frame). */
const MAX_DIRECTORY_BYTES = 64 * 1024 * 1024
const MAX_ENTRIES = 500_000
/** Compressed bytes pushed into the inflater at once: one push inflates to at most ~1,000x this. */
const INFLATE_STEP = 16 * 1024
/** Bytes read from the File at once. */
const READ_STEP = 1024 * 1024

/** What the viewer reads of a bundle's manifest.json (src/bundle/manifest.ts has all of it). */
export interface BundleManifest {
  browser_id?: string
  daemon_version?: string
  created_at?: string
  window?: { since?: string; until?: string | null }
  seq?: { first: number | null; last: number | null; events: number }
  recording?: { enabled?: boolean; frames?: number }
}

/** A problem with the bundle the user is shown as it is. */
export class BundleError extends Error {}

export interface ZipEntry {
  name: string
  method: number
  compressedSize: number
  size: number
  localOffset: number
}

const u16 = (b: DataView, o: number) => b.getUint16(o, true)
const u32 = (b: DataView, o: number) => b.getUint32(o, true)
const u64 = (b: DataView, o: number) => Number(b.getBigUint64(o, true))

async function bytesAt(file: Blob, start: number, end: number): Promise<DataView> {
  if (start < 0 || end > file.size || start > end) throw new BundleError('the zip is cut short or damaged')
  return new DataView(await file.slice(start, end).arrayBuffer())
}

/** The entries of a zip, from its end record (zip64 too) and central directory. */
export async function readZipDirectory(file: Blob): Promise<Map<string, ZipEntry>> {
  if (file.size < 22) throw new BundleError('this is not a zip file (too small)')
  const tailStart = Math.max(0, file.size - (22 + 0xffff))
  const tail = await bytesAt(file, tailStart, file.size)
  let eocd = -1
  for (let i = tail.byteLength - 22; i >= 0; i--) {
    if (u32(tail, i) === 0x06054b50) {
      eocd = i
      break
    }
  }
  if (eocd < 0) throw new BundleError('this is not a zip file (no end record): was the download complete?')
  let count = u16(tail, eocd + 10)
  let cdSize = u32(tail, eocd + 12)
  let cdOffset = u32(tail, eocd + 16)
  if (count === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) {
    const locator = eocd - 20
    if (locator < 0 || u32(tail, locator) !== 0x07064b50) throw new BundleError('the zip64 end record is missing')
    const recOffset = u64(tail, locator + 8)
    const rec = await bytesAt(file, recOffset, recOffset + 56)
    if (u32(rec, 0) !== 0x06064b50) throw new BundleError('the zip64 end record is damaged')
    count = u64(rec, 32)
    cdSize = u64(rec, 40)
    cdOffset = u64(rec, 48)
  }
  if (count > MAX_ENTRIES || cdSize > MAX_DIRECTORY_BYTES)
    throw new BundleError(`the zip lists ${count} files in ${cdSize} bytes: more than a bundle holds`)
  const cd = await bytesAt(file, cdOffset, cdOffset + cdSize)
  const names = new TextDecoder()
  const entries = new Map<string, ZipEntry>()
  let p = 0
  for (let n = 0; n < count; n++) {
    if (p + 46 > cd.byteLength || u32(cd, p) !== 0x02014b50) throw new BundleError('the zip directory is damaged')
    const nameLen = u16(cd, p + 28)
    const extraLen = u16(cd, p + 30)
    const commentLen = u16(cd, p + 32)
    if (p + 46 + nameLen + extraLen + commentLen > cd.byteLength) throw new BundleError('the zip directory is damaged')
    const e: ZipEntry = {
      name: names.decode(new Uint8Array(cd.buffer, cd.byteOffset + p + 46, nameLen)),
      method: u16(cd, p + 10),
      compressedSize: u32(cd, p + 20),
      size: u32(cd, p + 24),
      localOffset: u32(cd, p + 42),
    }
    // zip64 extra field: the 64-bit values of the fields that say 0xffffffff, in this order.
    for (let x = p + 46 + nameLen; x + 4 <= p + 46 + nameLen + extraLen;) {
      const id = u16(cd, x)
      const len = u16(cd, x + 2)
      if (id === 0x0001) {
        let f = x + 4
        for (const key of ['size', 'compressedSize', 'localOffset'] as const) {
          if (e[key] === 0xffffffff && f + 8 <= x + 4 + len) {
            e[key] = u64(cd, f)
            f += 8
          }
        }
      }
      x += 4 + len
    }
    if (!entries.has(e.name)) entries.set(e.name, e)
    p += 46 + nameLen + extraLen + commentLen
  }
  return entries
}

/** The bytes of one entry, in pieces, inflated; more than maxBytes is an error (a zip bomb stops here). */
export async function* entryChunks(file: Blob, e: ZipEntry, maxBytes: number): AsyncGenerator<Uint8Array> {
  const local = await bytesAt(file, e.localOffset, e.localOffset + 30)
  if (u32(local, 0) !== 0x04034b50) throw new BundleError(`${e.name}: damaged entry`)
  const start = e.localOffset + 30 + u16(local, 26) + u16(local, 28)
  const end = start + e.compressedSize
  if (end > file.size) throw new BundleError(`${e.name} is cut short`)
  const tooBig = () =>
    new BundleError(`${e.name} unpacks to more than ${Math.round(maxBytes / 1048576)} MiB: not opened (a zip bomb?)`)
  if (e.method === 0) {
    if (e.compressedSize > maxBytes) throw tooBig()
    for (let p = start; p < end; p += READ_STEP)
      yield new Uint8Array(await file.slice(p, Math.min(end, p + READ_STEP)).arrayBuffer())
    return
  }
  if (e.method !== 8) throw new BundleError(`${e.name}: compression method ${e.method} is not supported`)
  let produced = 0
  const out: Uint8Array[] = []
  const inflate = new Inflate(data => {
    produced += data.length
    if (produced > maxBytes) throw tooBig()
    out.push(data)
  })
  for (let p = start; p < end; p += READ_STEP) {
    const piece = new Uint8Array(await file.slice(p, Math.min(end, p + READ_STEP)).arrayBuffer())
    for (let q = 0; q < piece.length; q += INFLATE_STEP) {
      const last = p + q + INFLATE_STEP >= end
      try {
        inflate.push(piece.subarray(q, Math.min(piece.length, q + INFLATE_STEP)), last)
      } catch (err) {
        if (err instanceof BundleError) throw err
        throw new BundleError(`${e.name} is damaged (${(err as Error).message})`)
      }
      while (out.length > 0) yield out.shift()!
    }
  }
  if (start === end) inflate.push(new Uint8Array(0), true)
  while (out.length > 0) yield out.shift()!
}

async function entryBytes(file: Blob, e: ZipEntry, maxBytes: number): Promise<Uint8Array> {
  const parts: Uint8Array[] = []
  let n = 0
  for await (const c of entryChunks(file, e, maxBytes)) {
    parts.push(c)
    n += c.length
  }
  const out = new Uint8Array(n)
  let o = 0
  for (const c of parts) {
    out.set(c, o)
    o += c.length
  }
  return out
}

async function entryJson(file: Blob, e: ZipEntry): Promise<unknown> {
  const text = new TextDecoder().decode(await entryBytes(file, e, BUNDLE_MAX_SMALL_FILE))
  try {
    return JSON.parse(text)
  } catch {
    throw new BundleError(`${e.name} is not valid JSON`)
  }
}

/** An envelope as the viewer needs it, or undefined (then the line counts as malformed). */
function envelopeOf(v: unknown): Envelope | undefined {
  if (!v || typeof v !== 'object') return undefined
  const e = v as { seq?: unknown; event?: Record<string, unknown> }
  const ev = e.event
  if (!Number.isSafeInteger(e.seq) || (e.seq as number) < 1 || !ev || typeof ev !== 'object') return undefined
  if (typeof ev.type !== 'string' || typeof ev.category !== 'string' || typeof ev.ts !== 'number') return undefined
  if (!ev.data || typeof ev.data !== 'object' || Array.isArray(ev.data)) return undefined
  if (!ev.source || typeof ev.source !== 'object') ev.source = { kind: 'unknown' }
  return e as Envelope
}

export interface LoadProgress {
  events: number
  bytes: number
}

export interface OpenedBundle {
  name: string
  manifest?: BundleManifest
  events: Envelope[]
  frames: RecordingFrame[]
  /** Things the user should know (malformed lines skipped, files missing, events cut at the cap). */
  warnings: string[]
  recording: BundleRecording
  /** A performance trace of the bundle (perf-traces/<id>.json.gz), undefined when it holds none. */
  perfTrace(traceId: string): Promise<Blob | undefined>
}

/** The recording of a bundle for the player: frames/index.json and frames/<frame_id>.jpg. */
export class BundleRecording implements RecordingSource {
  readonly live = false

  constructor(
    private readonly file: Blob,
    private readonly entries: Map<string, ZipEntry>,
    readonly list: readonly RecordingFrame[],
  ) {}

  async frames(q: FrameQuery): Promise<FramePage> {
    const limit = Math.max(1, Math.min(1000, q.limit ?? 100))
    let i = 0
    if (q.offset !== undefined && q.offset > 0) while (i < this.list.length && this.list[i]!.frame_id < q.offset) i++
    else if (q.sinceUs !== undefined) while (i < this.list.length && this.list[i]!.ts < q.sinceUs) i++
    const items: RecordingFrame[] = []
    const inWindow = (f: RecordingFrame) => q.untilUs === undefined || f.ts < q.untilUs
    for (; i < this.list.length && items.length < limit && inWindow(this.list[i]!); i++) items.push(this.list[i]!)
    const next = this.list[i]
    const hasMore = next !== undefined && inWindow(next)
    return { items, hasMore, nextOffset: hasMore ? next.frame_id : 0 }
  }

  image(frameId: number): Promise<Blob | undefined> {
    return entryBlob(this.file, this.entries, `frames/${frameId}.jpg`, 'image/jpeg')
  }
}

/** One file of the bundle as a Blob (undefined when absent); a stored entry is a slice of the file, no copy. */
export async function entryBlob(
  file: Blob,
  entries: Map<string, ZipEntry>,
  name: string,
  type: string,
): Promise<Blob | undefined> {
  const e = entries.get(name)
  if (!e) return undefined
  if (e.method === 0) {
    // The daemon stores JPEGs and gzip traces uncompressed.
    const local = await bytesAt(file, e.localOffset, e.localOffset + 30)
    const start = e.localOffset + 30 + u16(local, 26) + u16(local, 28)
    if (start + e.compressedSize > file.size) return undefined
    return file.slice(start, start + e.compressedSize, type)
  }
  return new Blob([(await entryBytes(file, e, BUNDLE_MAX_SMALL_FILE)) as Uint8Array<ArrayBuffer>], { type })
}

/**
 * Opens a bundle: the directory, the manifest, every event (up to the caps), the frame index.
 * onEvents gets the events as they are parsed (a first batch early, so rows show while the rest loads).
 */
export async function openBundle(
  file: Blob,
  name: string,
  onEvents?: (events: Envelope[], progress: LoadProgress) => void,
): Promise<OpenedBundle> {
  const entries = await readZipDirectory(file)
  const warnings: string[] = []
  const eventsEntry = entries.get('events.ndjson')
  if (!eventsEntry)
    throw new BundleError(
      `${name} is not a debug bundle: it has no events.ndjson (it holds ${[...entries.keys()].slice(0, 5).join(', ') || 'nothing'})`,
    )
  let manifest: BundleManifest | undefined
  const manifestEntry = entries.get('manifest.json')
  if (!manifestEntry) warnings.push('manifest.json is missing: the window and the redaction policy are unknown')
  else {
    try {
      const m = await entryJson(file, manifestEntry)
      if (m && typeof m === 'object' && !Array.isArray(m)) manifest = m as BundleManifest
      else warnings.push('manifest.json is not an object: ignored')
    } catch (err) {
      if (!(err instanceof BundleError)) throw err
      warnings.push(`${err.message}: ignored`)
    }
  }

  const events: Envelope[] = []
  let malformed = 0
  let firstMalformed = 0
  let line = 0
  let bytes = 0
  /** The line being read, in pieces (joined once it ends: no copy per piece of a long line). */
  let pieces: string[] = []
  let pieceChars = 0
  let sorted = true
  let stopped = ''
  let announced = 0
  const decoder = new TextDecoder()
  const take = (text: string) => {
    line++
    if (text.trim() === '') return
    let env: Envelope | undefined
    try {
      env = envelopeOf(JSON.parse(text))
    } catch {
      env = undefined
    }
    if (!env) {
      if (malformed++ === 0) firstMalformed = line
      return
    }
    if (events.length > 0 && env.seq <= events[events.length - 1]!.seq) sorted = false
    events.push(env)
  }
  // Yield to the page between pieces, so it stays responsive while a large file is parsed.
  const breathe = () => new Promise<void>(r => setTimeout(r, 0))
  outer: for await (const chunk of entryChunks(file, eventsEntry, Number.MAX_SAFE_INTEGER)) {
    bytes += chunk.length
    const text = decoder.decode(chunk, { stream: true })
    let from = 0
    let nl: number
    while ((nl = text.indexOf('\n', from)) >= 0) {
      pieces.push(text.slice(from, nl))
      take(pieces.length === 1 ? pieces[0]! : pieces.join(''))
      pieces = []
      pieceChars = 0
      from = nl + 1
      if (events.length >= BUNDLE_MAX_EVENTS) {
        stopped = `showing the first ${BUNDLE_MAX_EVENTS.toLocaleString('en')} events of the bundle (the viewer's cap); the rest is in its events.ndjson`
        break outer
      }
    }
    if (from < text.length) {
      pieces.push(text.slice(from))
      pieceChars += text.length - from
    }
    if (pieceChars > BUNDLE_MAX_LINE_CHARS) {
      stopped = `events.ndjson line ${line + 1} is longer than ${BUNDLE_MAX_LINE_CHARS / 1048576} MiB: events after it are not shown`
      pieces = []
      break
    }
    if (bytes > BUNDLE_MAX_EVENT_BYTES) {
      stopped = `events.ndjson is larger than ${BUNDLE_MAX_EVENT_BYTES / 1048576} MiB: showing the events of its first ${BUNDLE_MAX_EVENT_BYTES / 1048576} MiB`
      break
    }
    if (onEvents && sorted && (announced === 0 ? events.length >= 2000 : events.length - announced >= 50_000)) {
      announced = events.length
      onEvents(events.slice(), { events: events.length, bytes })
    }
    await breathe()
  }
  if (!stopped) {
    pieces.push(decoder.decode())
    const rest = pieces.join('')
    if (rest) take(rest)
  }
  if (stopped) warnings.push(stopped)
  if (malformed > 0)
    warnings.push(
      `${malformed} line${malformed === 1 ? '' : 's'} of events.ndjson ${malformed === 1 ? 'is' : 'are'} not an event and ${malformed === 1 ? 'was' : 'were'} skipped (first: line ${firstMalformed})`,
    )
  if (!sorted) events.sort((a, b) => a.seq - b.seq)

  let frames: RecordingFrame[] = []
  const index = entries.get('frames/index.json')
  if (index) {
    try {
      const list = await entryJson(file, index)
      if (Array.isArray(list))
        frames = list
          .filter(
            (f): f is RecordingFrame =>
              !!f && typeof f === 'object' && Number.isSafeInteger(f.frame_id) && typeof f.ts === 'number',
          )
          .sort((a, b) => a.frame_id - b.frame_id)
      else warnings.push('frames/index.json is not a list: no recording shown')
    } catch (err) {
      if (!(err instanceof BundleError)) throw err
      warnings.push(`${err.message}: no recording shown`)
    }
  }
  await mapBundleStacks(
    entries,
    async e => new TextDecoder().decode(await entryBytes(file, e, BUNDLE_MAX_SMALL_FILE)),
    events,
    warnings,
  )
  return {
    name,
    manifest,
    events,
    frames,
    warnings,
    recording: new BundleRecording(file, entries, frames),
    perfTrace: id => entryBlob(file, entries, `perf-traces/${id}.json.gz`, 'application/gzip'),
  }
}
