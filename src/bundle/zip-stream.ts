// The streamed zip of a window that the debug bundle and the Playwright trace (src/trace) both are:
// entries one after another (yazl), each a stream read only as the zip pulls; the window's log read
// a page at a time up to the last seq committed when the build began; a reader that goes away stops
// everything, and a failure destroys the output (never a short zip that unpacks).
import { Readable, Transform } from 'node:stream'
import { finished } from 'node:stream/promises'
import yazl from 'yazl'
import type { EventLog, ReadQuery, StoredRecord } from '../store/event-log.js'

/** What a build reports while and after it runs (tests and the benches read it). */
export interface ZipStreamStats {
  /** Log pages read so far (all passes). */
  pagesRead: number
  /** Zip bytes handed to the reader of `output`. */
  bytesOut: number
}

export interface ZipWindow {
  /** Unix microseconds, inclusive. */
  sinceUs: number
  /** Unix microseconds, exclusive; undefined: up to the last event committed when the build began. */
  untilUs?: number
}

/**
 * One part of a streamed zip: an entry, or a group of entries written together (`frames/`). A
 * build is a list of these walked in order, sharing one context `C` (what the later ones need of
 * the earlier ones lives there).
 */
export interface EntryWriter<C> {
  /** The entry's name, or the folder of its entries, for reading the list. */
  readonly name: string
  write(ctx: C): Promise<void>
}

/** Runs the writers one after another: the next starts only once the zip consumed the one before. */
export async function writeEntries<C>(writers: readonly EntryWriter<C>[], ctx: C): Promise<void> {
  for (const w of writers) await w.write(ctx)
}

export class ZipStream {
  private readonly zip = new yazl.ZipFile()
  private readonly zipOut = this.zip.outputStream as unknown as Readable // a PassThrough (the typings say ReadableStream)
  private readonly abortCtl = new AbortController()
  readonly signal = this.abortCtl.signal
  readonly stats: ZipStreamStats = { pagesRead: 0, bytesOut: 0 }
  /** The window's upper seq, fixed when the build begins: the zip is one consistent snapshot. */
  readonly lastSeq: number
  readonly output: Transform
  private current: Readable | undefined

  constructor(
    private readonly log: EventLog,
    private readonly window: ZipWindow,
    private readonly page: { events: number; bytes: number },
    private readonly mtime: Date,
    what: string,
  ) {
    this.lastSeq = log.lastSeq
    const stats = this.stats
    // Counts what the reader took. (A 'data' listener on the zip's own stream would start it flowing
    // before the caller's pipe is attached, and the first bytes would be lost.)
    this.output = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        stats.bytesOut += chunk.length
        cb(null, chunk)
      },
    })
    this.zipOut.pipe(this.output)
    // The reader went away (or the pipe to it was torn down): stop reading the log at once.
    this.output.once('close', () => this.abort(new Error(`${what} output closed`)))
  }

  abort(reason: Error = new Error('build aborted')): void {
    if (this.signal.aborted) return
    this.abortCtl.abort(reason)
    this.current?.destroy(reason)
    this.zipOut.unpipe(this.output)
    this.zipOut.destroy()
    this.output.destroy(reason)
  }

  /** Pages of the window (oldest first, up to lastSeq), optionally only some categories. */
  async *records(categories?: readonly string[]): AsyncGenerator<StoredRecord[]> {
    const base: ReadQuery = {
      order: 'asc',
      limit: this.page.events,
      maxBytes: this.page.bytes,
      ...(this.window.untilUs !== undefined ? { untilUs: this.window.untilUs } : {}),
      ...(categories ? { categories: new Set(categories as never[]) } : {}),
    }
    let cursor: number | undefined
    for (;;) {
      this.signal.throwIfAborted()
      const page = await this.log.read(
        cursor === undefined ? { ...base, sinceUs: this.window.sinceUs } : { ...base, cursor },
      )
      this.signal.throwIfAborted()
      this.stats.pagesRead++
      const within = page.records.filter(r => r.seq <= this.lastSeq)
      if (within.length > 0) yield within
      if (!page.hasMore || within.length < page.records.length) return
      cursor = page.nextCursor
    }
  }

  /** One zip entry from an iterable of chunks; resolves once the zip consumed all of it. */
  async entry(
    name: string,
    chunks: Iterable<string | Buffer> | AsyncIterable<string | Buffer> | Readable,
    compress = true,
  ): Promise<void> {
    this.signal.throwIfAborted()
    const r = chunks instanceof Readable ? chunks : draining(chunks)
    this.current = r
    this.zip.addReadStream(r, name, { compress, mtime: this.mtime })
    const added = (this.zip as unknown as { entries: { doFileDataPump?: unknown }[] }).entries.at(-1)
    await finished(r) // also the error listener: yazl adds none to the streams it is given
    this.current = undefined
    // yazl keeps every entry (for the central directory) with the function that pumped its stream,
    // and so the stream: let go of it, or thousands of bodies and frames stay reachable to the end.
    if (added) added.doFileDataPump = undefined
  }

  /** Writes the central directory and waits until the reader took the last byte. */
  async end(): Promise<void> {
    this.zip.end()
    await finished(this.output)
  }
}

/**
 * A stream of the chunks that lets go of them as they are read: yazl keeps every entry's stream until
 * the zip ends, and a stream from Readable.from would keep its iterable (a frame's bytes, a body, a
 * finished generator's state) alive with it; thousands of entries would hold the whole export.
 */
function draining(chunks: Iterable<string | Buffer> | AsyncIterable<string | Buffer>): Readable {
  let it: Iterator<string | Buffer> | AsyncIterator<string | Buffer> | undefined =
    Symbol.asyncIterator in chunks
      ? (chunks as AsyncIterable<string | Buffer>)[Symbol.asyncIterator]()
      : (chunks as Iterable<string | Buffer>)[Symbol.iterator]()
  return new Readable({
    highWaterMark: 64 * 1024,
    read() {
      const from = it
      if (!from) return
      Promise.resolve(from.next()).then(
        r => {
          if (r.done) {
            it = undefined
            this.push(null)
          } else this.push(typeof r.value === 'string' ? Buffer.from(r.value, 'utf8') : r.value)
        },
        (err: unknown) => this.destroy(err as Error),
      )
    },
    destroy(err, cb) {
      const from = it
      it = undefined
      void Promise.resolve(from?.return?.()).catch(() => {})
      cb(err)
    },
  })
}
