// Learning one script's map in the background: its text is streamed, through the page that ran it
// or by the daemon's own fetch as the fetch rule says (fetch-rule.ts), and a scanner keeps only the
// last sourceMappingURL line and the Debug ID; then its map is decoded from a data: URL or fetched
// the same way under the size cap, else taken from a response the daemon captured on a page of the
// same origin, and parsed under the map bounds. No failure message quotes what a URL answered. The outcome says what to remember of the script;
// SourceMaps (source-maps.ts) queues the scripts and keeps the outcomes.
import type { Context, SourceMapFailure } from '../events/index.js'
import type { CapturedLookup } from './captured.js'
import { fetchRoute, originOf } from './fetch-rule.js'
import type { MapCache } from './map-cache.js'
import { contentId, type MapStore } from './map-store.js'
import { decodeDataUrl, mapHeaderOf, ScriptScanner, shownUrl } from './script-refs.js'
import { MapError, MapTextScanner, parseSourceMap, type MapLimits, type ParsedMap } from './source-map.js'

/**
 * Loads a URL: the way the page would (its frame, cookies and network; the collector implements it
 * over CDP), or the daemon's own fetch (direct-fetch.ts).
 */
export interface ResourceLoader {
  /** Streams the body's text to onChunk (false stops the read); resolves once the body ended or was stopped. */
  fetch(url: string, onChunk: (text: string) => boolean, timeoutMs: number): Promise<FetchOutcome>
}
export type FetchOutcome =
  | { ok: true; status: number; headers: Record<string, string> }
  /** `gone`: the page (target) went away meanwhile: nothing is known about the URL itself. */
  | {
      ok: false
      /** `private_address`, `refused_url`: the daemon's fetch refused the address or a redirect (fetch-rule.ts). */
      reason: 'not_found' | 'fetch_failed' | 'timeout' | 'private_address' | 'refused_url'
      message: string
      gone?: boolean
    }

/** The page whose frames named the scripts: its URL (the fetch rule, captured responses) and its context (the event's). */
export interface PageInfo {
  url?: string
  context: Context
}

/** What learning needs of the SourceMaps instance. */
export interface LearnContext {
  store: MapStore
  cache: MapCache
  limits: MapLimits
  maxMapBytes: number
  timeoutMs: number
  captured?: CapturedLookup
  /** The daemon's own fetch, for what may not go through the page (fetch-rule.ts). */
  direct: ResourceLoader
  /** Parses a stored map into the cache (once). */
  load(id: string): Promise<ParsedMap | undefined>
  closed(): boolean
  /** Counts one load (through the page or the daemon's own). */
  fetched(): void
  /** A URL as the store keeps it: masked like the events' (their stacks name scripts so). */
  maskUrl(url: string): string
}

export type LearnOutcome =
  /** A map covers the script now; `inMemory`: its cache id, when the disk store had no room for it. */
  | { kind: 'mapped'; inMemory?: string }
  /** The script names no map (nothing to report). */
  | { kind: 'none' }
  /** The page went away before its script or map could be read: asked again by the next error. */
  | { kind: 'retry' }
  | { kind: 'failed'; reason: SourceMapFailure; message: string; mapUrl?: string }

const pause = () => new Promise<void>(resolve => setImmediate(resolve))
const failed = (reason: SourceMapFailure, message: string, mapUrl?: string): LearnOutcome => ({
  kind: 'failed',
  reason,
  message,
  ...(mapUrl !== undefined ? { mapUrl } : {}),
})

/** One script: its refs, then its map (in the order source-maps.ts states). */
export async function learnScript(
  ctx: LearnContext,
  url: string,
  page: PageInfo,
  loader: ResourceLoader,
): Promise<LearnOutcome> {
  const max = ctx.maxMapBytes
  const route = fetchRoute(new URL(url), page.url)
  if (route.via === 'refused') return failed(route.refusal.reason, `script ${route.refusal.message}`)
  const origin = originOf(page.url)
  // The longest comment line kept: an inline map of up to max bytes, base64-encoded.
  const scanner = new ScriptScanner(Math.ceil((max * 4) / 3) + 1024)
  let scriptBytes = 0
  ctx.fetched()
  const script = await (route.via === 'page' ? loader : ctx.direct).fetch(
    url,
    chunk => {
      scanner.push(chunk)
      scriptBytes += chunk.length
      return scriptBytes <= 4 * max
    },
    ctx.timeoutMs,
  )
  let headers = script.ok ? script.headers : undefined
  if (!script.ok && origin) headers = (await ctx.captured?.(origin, url))?.headers
  const refs = scanner.finish()
  if (refs.debugId) await ctx.store.noteScriptDebugId(ctx.maskUrl(url), refs.debugId)
  // Uploads win: by the Debug ID the script carries first, then by its URL. Nothing is fetched.
  const upload =
    (refs.debugId && ctx.store.uploadedByDebugId(refs.debugId)) || ctx.store.uploadedByUrl(ctx.maskUrl(url))
  if (upload) {
    await ctx.load(upload.id)
    return { kind: 'mapped' }
  }
  if (!script.ok && !headers)
    return script.gone ? { kind: 'retry' } : failed(script.reason, `script: ${script.message}`)
  const ref = mapHeaderOf(headers) ?? refs.mapRef
  if (!ref) {
    if (scanner.tooLarge) return failed('too_large', `the inline map is over ${max} bytes`)
    if (scriptBytes > 4 * max)
      return failed('too_large', `the script is over ${4 * max} characters; its map comment was not read`)
    return { kind: 'none' }
  }
  let mapUrl: string
  try {
    mapUrl = /^data:/i.test(ref) ? ref : new URL(ref, url).href
  } catch {
    return failed('refused_url', `the map reference ${JSON.stringify(shownUrl(ref))} is not a URL`)
  }
  const text = await mapText(ctx, mapUrl, page, loader)
  if (text === 'gone') return { kind: 'retry' }
  if (typeof text !== 'string') return failed(text.reason, text.message, mapUrl)
  let parsed: ParsedMap
  try {
    parsed = await parseSourceMap(text, ctx.limits, pause)
  } catch (err) {
    if (!(err instanceof MapError)) throw err
    return failed(err.reason, withoutText(err), mapUrl)
  }
  if (refs.debugId && parsed.debugId && parsed.debugId !== refs.debugId)
    return failed('debug_id_mismatch', `the script's Debug ID is ${refs.debugId}, the map's ${parsed.debugId}`, mapUrl)
  const bytes = Buffer.from(text)
  const entry = {
    url: ctx.maskUrl(url),
    map_url: ctx.maskUrl(shownUrl(mapUrl)),
    ...(parsed.debugId ? { debug_id: parsed.debugId } : {}),
  }
  const stored = ctx.closed() ? undefined : await ctx.store.putFetched(bytes, entry)
  const id = stored?.id ?? contentId(bytes)
  ctx.cache.put(id, parsed)
  return stored ? { kind: 'mapped' } : { kind: 'mapped', inMemory: id }
}

/**
 * A parse failure's message without the text's own characters: JSON.parse quotes the start of what
 * it read, and a map URL may have been answered by anything (an in-VM service's page, a login form).
 */
function withoutText(err: MapError): string {
  // parseSourceMap's own JSON messages keep only the offset (source-map.ts).
  if (err.reason === 'bad_json') return err.message.startsWith('not JSON') ? err.message : 'not JSON'
  if (err.reason === 'not_v3' && err.message.startsWith('version is ')) return 'version is not 3'
  return err.message.replace(/^".*" at (\d+) is not/, 'the character at $1 is not')
}

/** A map's text: decoded from a data: URL, fetched (fetch-rule.ts), else a captured response of the page's origin. */
async function mapText(
  ctx: LearnContext,
  mapUrl: string,
  page: PageInfo,
  loader: ResourceLoader,
): Promise<string | 'gone' | { reason: SourceMapFailure; message: string }> {
  const max = ctx.maxMapBytes
  if (/^data:/i.test(mapUrl)) {
    const text = decodeDataUrl(mapUrl)
    if (text === undefined) return { reason: 'bad_json', message: 'the data: URL could not be decoded as UTF-8 text' }
    return text.length > max ? { reason: 'too_large', message: `the inline map is over ${max} bytes` } : text
  }
  const route = fetchRoute(new URL(mapUrl), page.url)
  if (route.via === 'refused') return route.refusal
  const chunks: string[] = []
  let size = 0
  // Read as it arrives: a map that could only be refused once parsed stops the read there instead.
  const scanner = new MapTextScanner(ctx.limits.maxBytes)
  let refusedBy: MapError | undefined
  ctx.fetched()
  const got = await (route.via === 'page' ? loader : ctx.direct).fetch(
    mapUrl,
    chunk => {
      size += chunk.length
      if (size > max) return false
      try {
        scanner.push(chunk)
      } catch (err) {
        if (!(err instanceof MapError)) throw err
        refusedBy = err
        return false
      }
      chunks.push(chunk)
      return true
    },
    ctx.timeoutMs,
  )
  if (refusedBy) return { reason: refusedBy.reason, message: refusedBy.message }
  if (size > max) return { reason: 'too_large', message: `the map is over ${max} bytes (--sourcemap-max-bytes)` }
  if (got.ok) return chunks.join('')
  const origin = originOf(page.url)
  const captured = origin ? await ctx.captured?.(origin, mapUrl) : undefined
  if (captured?.body !== undefined && captured.status >= 200 && captured.status < 300) return captured.body
  return got.gone ? 'gone' : { reason: got.reason, message: got.message }
}
