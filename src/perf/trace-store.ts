// Finished performance traces on disk (<data-dir>/perf-traces): one gzip file per trace, written
// under a temporary name and renamed when complete, and an index of what each file is. The store
// keeps at most `maxCount` traces and `maxBytes` bytes; the oldest go first. A file without an index
// row (a crash between rename and index write) or a temporary file is removed at open.
import { createReadStream, createWriteStream, type ReadStream, type WriteStream } from 'node:fs'
import { mkdir, readdir, readFile, rename, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { writeFileAtomic } from '../util/atomic-file.js'

/** A stored trace as the API lists it. */
export interface StoredPerfTrace {
  trace_id: string
  started_at: string
  ended_at: string
  duration_ms: number
  target_id?: string
  categories: string[]
  bytes: number
  /** Chromium reported that its trace buffer overflowed: the trace misses events. */
  data_loss: boolean
}

export interface PerfTraceStoreOptions {
  dir: string
  maxCount: number
  maxBytes: number
}

const INDEX = 'index.json'
const PART = '.part'
const fileOf = (id: string) => `${id}.json.gz`

/** One trace being written: chunks in order, then commit or discard. */
export interface TraceFileWriter {
  /** Appends a chunk; resolves once the file took it (back-pressure). */
  write(chunk: Buffer): Promise<void>
  readonly bytes: number
  commit(meta: Omit<StoredPerfTrace, 'bytes'>): Promise<StoredPerfTrace>
  discard(): Promise<void>
}

export class PerfTraceStore {
  private traces: StoredPerfTrace[] = []

  private constructor(private readonly opts: PerfTraceStoreOptions) {}

  static async open(opts: PerfTraceStoreOptions): Promise<PerfTraceStore> {
    const store = new PerfTraceStore(opts)
    await mkdir(opts.dir, { recursive: true, mode: 0o700 })
    await store.load()
    return store
  }

  private async load(): Promise<void> {
    let rows: StoredPerfTrace[] = []
    try {
      const parsed: unknown = JSON.parse(await readFile(join(this.opts.dir, INDEX), 'utf8'))
      if (Array.isArray(parsed)) rows = parsed.filter(isStoredTrace)
    } catch {
      // No index yet, or an unreadable one: the files it named are swept below.
    }
    const names = new Set(await readdir(this.opts.dir))
    this.traces = rows.filter(r => names.has(fileOf(r.trace_id)))
    const kept = new Set(this.traces.map(r => fileOf(r.trace_id)))
    for (const name of names)
      if (name !== INDEX && !kept.has(name)) await rm(join(this.opts.dir, name), { force: true, recursive: true })
    if (this.traces.length !== rows.length) await this.writeIndex()
  }

  /** Oldest first. */
  list(): StoredPerfTrace[] {
    return this.traces.slice()
  }

  get(id: string): StoredPerfTrace | undefined {
    return this.traces.find(t => t.trace_id === id)
  }

  /** The file's bytes; undefined when the trace is gone (dropped since it was listed). */
  async open(id: string): Promise<ReadStream | undefined> {
    if (!this.get(id)) return undefined
    const stream = createReadStream(join(this.opts.dir, fileOf(id)))
    // Opening fails only when the file was dropped between get() and here.
    return await new Promise(resolve => {
      stream.once('open', () => resolve(stream))
      stream.once('error', () => resolve(undefined))
    })
  }

  get totalBytes(): number {
    return this.traces.reduce((n, t) => n + t.bytes, 0)
  }

  writer(id: string): TraceFileWriter {
    const part = join(this.opts.dir, fileOf(id) + PART)
    const out: WriteStream = createWriteStream(part, { mode: 0o600 })
    let failure: Error | undefined
    out.on('error', err => (failure ??= err))
    let bytes = 0
    const closed = () => new Promise<void>(resolve => (out.closed ? resolve() : out.end(() => resolve())))
    return {
      get bytes() {
        return bytes
      },
      write: async chunk => {
        if (failure) throw failure
        bytes += chunk.length
        if (!out.write(chunk))
          await new Promise<void>((resolve, reject) => {
            out.once('drain', resolve)
            out.once('error', reject)
          })
      },
      commit: async meta => {
        await closed()
        if (failure) throw failure
        await rename(part, join(this.opts.dir, fileOf(id)))
        const row: StoredPerfTrace = { ...meta, bytes: (await stat(join(this.opts.dir, fileOf(id)))).size }
        this.traces.push(row)
        await this.evict()
        await this.writeIndex()
        return row
      },
      discard: async () => {
        await closed()
        await rm(part, { force: true })
      },
    }
  }

  private async evict(): Promise<void> {
    let total = this.totalBytes
    while (this.traces.length > 1 && (this.traces.length > this.opts.maxCount || total > this.opts.maxBytes)) {
      const oldest = this.traces.shift()!
      total -= oldest.bytes
      await rm(join(this.opts.dir, fileOf(oldest.trace_id)), { force: true })
    }
  }

  private async writeIndex(): Promise<void> {
    await writeFileAtomic(join(this.opts.dir, INDEX), JSON.stringify(this.traces))
  }
}

function isStoredTrace(v: unknown): v is StoredPerfTrace {
  if (!v || typeof v !== 'object') return false
  const r = v as Record<string, unknown>
  return (
    typeof r.trace_id === 'string' &&
    /^[0-9a-f-]{36}$/.test(r.trace_id) &&
    typeof r.bytes === 'number' &&
    typeof r.started_at === 'string' &&
    Array.isArray(r.categories)
  )
}
