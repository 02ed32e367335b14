// One idea: the daemon's source maps: which map covers a script, learning that in the background, and mapping
// stack traces with it on every read path (events API, SSE, bundle, trace, OTLP, NATS). One instance
// per daemon.
//
// A script's map is, in this order: an upload for the Debug ID its text carries, an upload for its
// URL, or the map it names (SourceMap header, else its last `//# sourceMappingURL=` comment; data:
// URLs decoded inline) fetched through the page that ran it or by the daemon itself, as the fetch
// rule says (fetch-rule.ts), else found among the responses the daemon captured (learn.ts).
// Learning runs one script at a time off the capture path: the console collector stores its event
// at once, as Chromium sent it, and asks for the scripts of its frames (`want`). Mapping is one
// read-side derivation (`ReadMapping`, src/store): every reader maps what it serves with the maps known then,
// from disk (`mapRecords`) or, on live paths, from memory (`mapRecordsNow`); `generation` says
// when what was mapped before may map further. Nothing stored is rewritten. A script whose map
// cannot be had is reported once (sourcemap_failed) and never tried again.
import type { EventData, SourceMapFailure, StackTrace } from '../events/index.js'
import { ServiceError } from '../errors.js'
import { silentLogger, type Logger } from '../log.js'
import type { StoredRecord } from '../store/event-log.js'
import type { ReadMapping } from '../store/read-mapping.js'
import type { CapturedLookup } from './captured.js'
import { directLoader, type DirectFetchOptions } from './direct-fetch.js'
import { mapEventData, mapStack, stackUrls, type MapOf } from './frames.js'
import { appliedRecords, mappableRecords, type FoundEnvelope } from './mapped-records.js'
import { learnScript, type LearnContext, type LearnOutcome, type PageInfo, type ResourceLoader } from './learn.js'
import { MapCache } from './map-cache.js'
import { PageBudgets, type Clock, type PageRate } from './page-budget.js'
import { MapStore, type StoredMap } from './map-store.js'
import { shownUrl } from './script-refs.js'
import { MapError, normalizeDebugId, parseSourceMap, type MapLimits, type ParsedMap } from './source-map.js'

export type { FetchOutcome, PageInfo, ResourceLoader } from './learn.js'

/** An uploaded map as the API lists it. */
export interface UploadedMapView {
  url?: string
  debug_id?: string
  bytes: number
  uploaded_at: string
}

export interface SourceMapsOptions {
  /** `<data-dir>/sourcemaps`. */
  dir: string
  /** Largest map read, fetched or uploaded (413 above). */
  maxMapBytes: number
  /** Uploaded plus fetched maps kept on disk. */
  storeBytes: number
  /** Parsed maps kept in memory (estimated heap); also the bound of one map's segments. */
  cacheBytes: number
  /** Whether scripts and maps are loaded through the browser (uploads apply either way). */
  fetch: boolean
  /** Where sourcemap_failed goes (the pipeline). */
  report?: (data: EventData<'sourcemap_failed'>) => void
  /** Responses the daemon captured, for what the browser can no longer load. */
  captured?: CapturedLookup
  /** Masks a URL-like original source like the event's other URLs. */
  maskSource?: (source: string) => string
  /**
   * Masks a script or map URL as the pipeline masks events' URLs: the store keeps and matches
   * scripts by that form, which stored stacks name and the raw URL of the capture path masks to.
   */
  maskUrl?: (url: string) => string
  /** Envelopes mapped on read are left raw past this size (the envelope cap). */
  maxEnvelopeBytes?: number
  logger?: Logger
  /** Host name to addresses for the daemon's own fetch (default: the system resolver); tests pin it. */
  resolveHost?: DirectFetchOptions['resolveHost']
  /** Tests only: the address dialled for a checked one (direct-fetch.ts). */
  dial?: DirectFetchOptions['dial']
  /** The daemon's own fetch (default: direct-fetch.ts over resolveHost and dial); tests script it. */
  direct?: ResourceLoader
  /** One load (script or map) at most. */
  fetchTimeoutMs?: number
  maxSources?: number
  /** Scripts waiting to be learned at most; more are ignored until the queue drains. */
  maxQueue?: number
  /** Scripts one page may have learned each second, and at once (default 20 and 40). */
  pageRate?: PageRate
  /** The clock and the wait of the per-page budget (tests drive both). */
  clock?: Clock
}

type ScriptState = 'queued' | 'none' | 'failed' | 'mapped'

/** Scripts whose state is remembered at most (the oldest go first; a forgotten failure may be tried once more). */
const MAX_SCRIPTS = 10_000
/**
 * Scripts with longer URLs are not learned (an eval'd script's `//# sourceURL=` can be anything a page
 * writes): the table above then holds at most 20 MB of URLs. Uploads still cover them.
 */
export const MAX_SCRIPT_URL_CHARS = 2048
const DEFAULT_FETCH_TIMEOUT_MS = 10_000
const RELOAD_EVERY_MS = 60_000
const DEFAULT_MAX_SOURCES = 10_000

const pause = () => new Promise<void>(resolve => setImmediate(resolve))

export class SourceMaps implements ReadMapping {
  readonly cache: MapCache
  readonly limits: MapLimits
  private readonly scripts = new Map<string, ScriptState>()
  private readonly queue: { url: string; page: PageInfo; loader: ResourceLoader }[] = []
  /**
   * Each page's budget: a page naming thousands of scripts (new Debug IDs, eval'd sourceURLs) is
   * learned at the page rate, whatever it names, and other pages' scripts go first meanwhile.
   */
  private readonly budgets: PageBudgets
  private running = false
  private draining: Promise<void> | undefined
  private closed = false
  /** Maps learned but not stored (no room on disk): script URL -> cache id. */
  private readonly inMemory = new Map<string, string>()
  /** Stored maps that failed to parse (a corrupt file): never parsed again. */
  private readonly unusable = new Set<string>()
  private readonly loading = new Map<string, Promise<ParsedMap | undefined>>()
  /** When the capture path last asked for each map to be loaded back (reload). */
  private readonly reloadedAt = new Map<string, number>()
  private readonly learned = new Set<() => void>()
  private generation_ = 0
  private readonly logger: Logger
  readonly stats = { learned: 0, failed: 0, none: 0, fetches: 0 }

  /** Bytes the disk store wrote to its index so far (journal appends and snapshots). */
  get indexBytesWritten(): number {
    return this.store.writes.bytes
  }
  /** What learning a script needs of this instance (learn.ts). */
  private readonly learning: LearnContext

  private constructor(
    private readonly store: MapStore,
    private readonly opts: SourceMapsOptions,
  ) {
    this.cache = new MapCache(opts.cacheBytes)
    this.budgets = new PageBudgets(opts.pageRate, opts.clock)
    this.limits = {
      maxSources: opts.maxSources ?? DEFAULT_MAX_SOURCES,
      maxBytes: opts.cacheBytes,
    }
    this.logger = opts.logger ?? silentLogger
    this.learning = {
      store,
      cache: this.cache,
      limits: this.limits,
      maxMapBytes: opts.maxMapBytes,
      timeoutMs: opts.fetchTimeoutMs ?? DEFAULT_FETCH_TIMEOUT_MS,
      captured: opts.captured,
      direct: opts.direct ?? directLoader({ resolveHost: opts.resolveHost, dial: opts.dial }),
      load: id => this.load(id),
      closed: () => this.closed,
      fetched: () => void this.stats.fetches++,
      maskUrl: this.maskUrl,
    }
  }

  static async open(opts: SourceMapsOptions): Promise<SourceMaps> {
    return new SourceMaps(await MapStore.open(opts.dir, opts.storeBytes), opts)
  }

  get generation(): number {
    return this.generation_
  }

  /** Called whenever a map becomes known (learned or uploaded). */
  onLearned(listener: () => void): () => void {
    this.learned.add(listener)
    return () => this.learned.delete(listener)
  }

  /** Resolves once every script asked for so far has been learned or given up on. */
  async settled(): Promise<void> {
    while (this.running && this.draining) await this.draining
  }

  /** Stops learning: the queue is dropped and the script being learned finishes without effect. */
  async close(): Promise<void> {
    this.closed = true
    this.queue.length = 0
    await this.draining
  }

  private readonly maskUrl = (url: string): string => this.opts.maskUrl?.(url) ?? url

  /** The stored map that covers a script now: Debug ID upload, URL upload, fetched (see the file's comment). */
  private metaOf(raw: string): { id: string } | undefined {
    const url = this.maskUrl(raw)
    const debugId = this.store.scriptDebugId(url)
    const byId = debugId ? this.store.uploadedByDebugId(debugId) : undefined
    if (byId) return byId
    const uploaded = this.store.uploadedByUrl(url)
    if (uploaded) return uploaded
    const fetched = this.store.fetchedByUrl(url)
    if (fetched) return fetched
    const id = this.inMemory.get(url)
    return id ? { id } : undefined
  }

  /** The parsed map of a script if it is in memory now (no I/O): what the capture path and OTLP use. */
  readonly mapOf: MapOf = url => {
    const meta = this.metaOf(url)
    return meta ? this.cache.get(meta.id) : undefined
  }

  /** The stack mapped with the maps in memory, or undefined when nothing changed. */
  mapNow(stack: StackTrace): StackTrace | undefined {
    return mapStack(stack, this.mapOf, this.opts.maskSource)
  }

  /** An envelope with its stack mapped from memory (OTLP export); the same object when nothing changed. */
  mapEnvelope<E extends { event: { type: string; data: object } }>(env: E): E {
    const data = mapEventData(
      env.event.type,
      env.event.data as { stack_trace?: StackTrace },
      this.mapOf,
      this.opts.maskSource,
    )
    return data ? { ...env, event: { ...env.event, data } } : env
  }

  /**
   * The capture path's request: learn the maps of a stack's scripts in the background. Never waits:
   * scripts already known, queued or given up on cost a lookup each.
   */
  want(stack: StackTrace, page: PageInfo, loader: ResourceLoader | undefined): void {
    if (this.closed) return
    for (const url of stackUrls(stack)) {
      const meta = this.metaOf(url)
      if (meta && !this.cache.has(meta.id)) this.reload(meta.id)
      if (this.scripts.has(url) || !this.opts.fetch || !loader || url.length > MAX_SCRIPT_URL_CHARS) continue
      if (!/^https?:/i.test(url) || url === page.url?.replace(/#.*$/, '')) {
        // Not a fetchable script, or an inline script of the document: only an upload can cover it.
        this.remember(url, 'none')
        continue
      }
      if (this.queue.length >= (this.opts.maxQueue ?? 256)) continue
      this.remember(url, 'queued')
      this.queue.push({ url, page, loader })
    }
    if (!this.running && this.queue.length > 0) this.draining = this.drain()
  }

  /** Loads into memory the maps known for these scripts (read paths call it before mapping). */
  async prepare(urls: Iterable<string>): Promise<void> {
    for (const url of urls) {
      const meta = this.metaOf(url)
      if (meta && !this.cache.has(meta.id)) await this.load(meta.id)
    }
  }

  /**
   * Records as a reader serves them: mappable console events with their frames mapped by every map
   * known now (re-serialised; the rest as stored). `used` collects the scripts that have a map.
   */
  async mapRecords(records: readonly StoredRecord[], used?: Set<string>): Promise<StoredRecord[]> {
    const found = mappableRecords(records, this.anyKnown())
    if (found === undefined) return records as StoredRecord[]
    await this.prepare(found.urls)
    if (used) for (const url of found.urls) if (this.metaOf(url)) used.add(url)
    return this.applied(records, found.envs)
  }

  mapRecordsNow(records: readonly StoredRecord[]): readonly StoredRecord[] {
    const found = mappableRecords(records, this.anyKnown())
    return found === undefined ? records : this.applied(records, found.envs)
  }

  /** False while no map is known at all (the common case for most sessions): records are served unparsed. */
  private anyKnown(): boolean {
    return this.store.size > 0 || this.inMemory.size > 0
  }

  private applied(records: readonly StoredRecord[], envs: readonly FoundEnvelope[]): StoredRecord[] {
    return appliedRecords(records, envs, env => this.mapEnvelope(env), this.opts.maxEnvelopeBytes ?? Infinity)
  }

  /** The maps covering these scripts, for a bundle's `sourcemaps/`: one entry per stored file. */
  bundleMaps(urls: Iterable<string>): { id: string; map: StoredMap | undefined; scripts: string[] }[] {
    const byId = new Map<string, { id: string; map: StoredMap | undefined; scripts: string[] }>()
    for (const url of urls) {
      const meta = this.metaOf(url)
      if (!meta) continue
      const entry = byId.get(meta.id) ?? {
        id: meta.id,
        map: 'kind' in meta ? this.masked(meta as StoredMap) : undefined,
        scripts: [],
      }
      entry.scripts.push(this.maskUrl(url))
      byId.set(meta.id, entry)
    }
    return [...byId.values()]
  }

  /** A stored row with its URLs masked (a store written before it masked them keeps them raw). */
  private masked(m: StoredMap): StoredMap {
    return {
      ...m,
      ...(m.url !== undefined ? { url: this.maskUrl(m.url) } : {}),
      ...(m.map_url !== undefined ? { map_url: this.maskUrl(m.map_url) } : {}),
    }
  }

  /** A stored map's bytes (a bundle copies them). */
  read(id: string): Promise<Buffer | undefined> {
    return this.store.read(id)
  }

  /** Uploaded maps, oldest first. */
  list(): UploadedMapView[] {
    return this.store.uploaded().map(view)
  }

  /**
   * Stores an uploaded map for a script URL, or for the Debug ID it carries. 413 over the size cap
   * or the segment / source bounds, 400 when it is not JSON or not a v3 map, 507 when the store is full.
   */
  async upload(bytes: Buffer, url: string | undefined): Promise<UploadedMapView> {
    if (bytes.length > this.opts.maxMapBytes) throw tooLarge(bytes.length, this.opts.maxMapBytes)
    let text: string
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
    } catch {
      throw badMap('bad_json', 'the body is not UTF-8 text')
    }
    let parsed: ParsedMap
    try {
      parsed = await parseSourceMap(text, this.limits, pause)
    } catch (err) {
      if (!(err instanceof MapError)) throw err
      if (err.reason === 'too_many_segments' || err.reason === 'too_many_sources')
        throw new ServiceError(413, 'payload_too_large', `the map is over a bound: ${err.message}`, [
          { code: err.reason, message: err.message },
        ])
      throw badMap(err.reason, err.message)
    }
    if (url === undefined && !parsed.debugId)
      throw new ServiceError(400, 'bad_request', 'invalid url: required for a map without a debugId', [
        { code: 'invalid_input', message: 'url: required for a map without a debugId' },
      ])
    const meta = await this.store.upload(bytes, {
      url: url === undefined ? undefined : this.maskUrl(url),
      debugId: parsed.debugId,
    })
    this.cache.put(meta.id, parsed)
    this.notify()
    return view(meta)
  }

  /** Removes uploads by script URL or Debug ID; how many were removed. */
  async remove(key: { url?: string; debugId?: string }): Promise<number> {
    const debugId = key.debugId !== undefined ? (normalizeDebugId(key.debugId) ?? key.debugId) : undefined
    return (await this.store.removeUploaded({ url: key.url, debugId })).length
  }

  private remember(url: string, state: ScriptState): void {
    this.scripts.delete(url)
    this.scripts.set(url, state)
    while (this.scripts.size > MAX_SCRIPTS) this.scripts.delete(this.scripts.keys().next().value!)
  }

  private notify(): void {
    this.generation_++
    for (const l of this.learned) l()
  }

  /**
   * The capture path's reload of a known map the cache pushed out: at most once a minute per map, so
   * maps that do not fit in the cache together are not parsed again and again by a stream of errors
   * (the read paths still map with them, one load per read).
   */
  private reload(id: string): void {
    const now = Date.now()
    if ((this.reloadedAt.get(id) ?? -Infinity) > now - RELOAD_EVERY_MS) return
    this.reloadedAt.set(id, now)
    if (this.reloadedAt.size > 1000)
      for (const [k, at] of this.reloadedAt) if (at <= now - RELOAD_EVERY_MS) this.reloadedAt.delete(k)
    void this.load(id)
  }

  /** Parses a stored map into the cache once, however many readers ask at the same time. */
  private load(id: string): Promise<ParsedMap | undefined> {
    const cached = this.cache.get(id)
    if (cached) return Promise.resolve(cached)
    if (this.unusable.has(id)) return Promise.resolve(undefined)
    let p = this.loading.get(id)
    if (!p) {
      p = (async () => {
        const bytes = await this.store.read(id)
        if (!bytes) return undefined
        try {
          const parsed = await parseSourceMap(bytes.toString('utf8'), this.limits, pause)
          this.cache.put(id, parsed)
          return parsed
        } catch (err) {
          this.unusable.add(id)
          this.logger.warn({ id, err: (err as Error).message }, 'a stored source map could not be parsed')
          return undefined
        }
      })().finally(() => this.loading.delete(id))
      this.loading.set(id, p)
    }
    return p
  }

  private async drain(): Promise<void> {
    this.running = true
    try {
      for (let job = await this.nextJob(); job && !this.closed; job = await this.nextJob()) {
        let outcome: LearnOutcome
        try {
          outcome = await learnScript(this.learning, job.url, job.page, job.loader)
        } catch (err) {
          outcome = { kind: 'failed', reason: 'fetch_failed', message: (err as Error).message }
        }
        if (this.closed) return
        if (outcome.kind === 'failed') this.fail(job.url, job.page, outcome.reason, outcome.message, outcome.mapUrl)
        else if (outcome.kind === 'none') {
          this.remember(job.url, 'none')
          this.stats.none++
        } else if (outcome.kind === 'retry') this.scripts.delete(job.url)
        else {
          if (outcome.inMemory) this.inMemory.set(this.maskUrl(job.url), outcome.inMemory)
          this.learnt(job.url)
        }
      }
    } finally {
      this.running = false
    }
  }

  /** The first queued script whose page has budget left, waiting for a refill when none has. */
  private async nextJob(): Promise<(typeof this.queue)[number] | undefined> {
    while (this.queue.length > 0 && !this.closed) {
      let wait = Infinity
      for (let i = 0; i < this.queue.length; i++) {
        const page = this.queue[i]!.page
        const ms = this.budgets.take(page.context.target_id ?? page.url ?? '')
        if (ms === 0) return this.queue.splice(i, 1)[0]
        wait = Math.min(wait, ms)
      }
      await this.budgets.sleep(wait)
    }
    return undefined
  }

  private fail(url: string, page: PageInfo, reason: SourceMapFailure, message: string, mapUrl?: string): void {
    if (this.closed) return
    this.remember(url, 'failed')
    this.stats.failed++
    const data: EventData<'sourcemap_failed'> = Object.assign(
      { ...page.context },
      {
        script_url: url,
        ...(mapUrl !== undefined ? { map_url: shownUrl(mapUrl) } : {}),
        reason,
        message: message.length > 512 ? `${message.slice(0, 511)}…` : message,
      },
    )
    this.logger.debug({ script: url, reason, message }, 'source map not used')
    this.opts.report?.(data)
  }

  private learnt(url: string): void {
    if (this.closed) return
    this.remember(url, 'mapped')
    this.stats.learned++
    this.notify()
  }
}

function view(m: StoredMap): UploadedMapView {
  return {
    ...(m.url !== undefined ? { url: m.url } : {}),
    ...(m.debug_id !== undefined ? { debug_id: m.debug_id } : {}),
    bytes: m.bytes,
    uploaded_at: m.at,
  }
}

function tooLarge(bytes: number, max: number): ServiceError {
  return new ServiceError(
    413,
    'payload_too_large',
    `the map is ${bytes} bytes, over the cap of ${max} (--sourcemap-max-bytes)`,
  )
}

function badMap(reason: string, message: string): ServiceError {
  return new ServiceError(400, 'bad_request', `not a usable source map: ${message}`, [{ code: reason, message }])
}

export { tooLarge as sourceMapTooLarge }
