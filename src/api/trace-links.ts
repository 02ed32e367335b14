// Signed trace links: a read-only credential for one trace (one browser, one window, one target)
// that travels in a URL, so a viewer in another origin (trace.playwright.dev) can fetch the trace
// without the bearer token, which never appears in a URL. The credential is an HMAC-SHA256 over its
// own terms with the daemon's link key; it names what it grants, so it is useless for any other
// route or window, and it dies with its expiry, with the key (rotating the key revokes every link),
// or when its id is revoked (TraceLinkRevocations: one link, before its expiry).
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { writeFileAtomic } from '../util/atomic-file.js'
import { ApiError } from './errors.js'

/** What a link grants: the trace of this window of this browser (and target), until `expUs`. */
export interface TraceLinkGrant {
  browserId: string
  sinceUs: number
  untilUs: number
  targetId?: string
  /** Unix microseconds. */
  expUs: number
  /** Names the link for revocation (newLinkId()). */
  linkId: string
}

/** The signed credential's query parameter on the trace route. */
export const LINK_PARAM = 'link'
export const LINK_TTL_DEFAULT_S = 900
/**
 * A link is a credential in a URL (browser history, proxy and viewer logs keep it): an hour covers
 * a debugging session, and a leaked one dies within it even if nobody revokes it.
 */
export const LINK_TTL_MAX_S = 3_600
/** 16 random bytes, base64url. */
export const LINK_ID_PATTERN = /^[A-Za-z0-9_-]{22}$/

export function newLinkId(): string {
  return randomBytes(16).toString('base64url')
}
const PURPOSE = 'browser-telemetry trace link v1\n'

export class TraceLinkSigner {
  private constructor(private readonly key: Buffer) {}

  /** A key of its own, made at start: links end with the process. */
  static random(): TraceLinkSigner {
    return new TraceLinkSigner(randomBytes(32))
  }

  /** The key in a file (at least 32 bytes of text): links survive a restart until the file changes. */
  static async fromFile(path: string): Promise<TraceLinkSigner> {
    let text: string
    try {
      text = (await readFile(path, 'utf8')).trim()
    } catch (err) {
      throw new Error(
        `--trace-link-key-file: cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      )
    }
    if (Buffer.byteLength(text) < 32) throw new Error(`--trace-link-key-file: ${path} holds fewer than 32 bytes`)
    return new TraceLinkSigner(Buffer.from(text, 'utf8'))
  }

  private mac(payload: string): Buffer {
    return createHmac('sha256', this.key)
      .update(PURPOSE + payload)
      .digest()
  }

  sign(g: TraceLinkGrant): string {
    const payload = Buffer.from(
      JSON.stringify({
        b: g.browserId,
        s: g.sinceUs,
        u: g.untilUs,
        e: g.expUs,
        i: g.linkId,
        ...(g.targetId ? { t: g.targetId } : {}),
      }),
    ).toString('base64url')
    return `${payload}.${this.mac(payload).toString('base64url')}`
  }

  /** The grant of a credential, or a 401 saying why not (unsigned, altered, expired, revoked, another browser). */
  verify(credential: string, browserId: string, nowUs: number, revoked?: TraceLinkRevocations): TraceLinkGrant {
    const [payload, sig, extra] = credential.split('.')
    const refused = (why: string) =>
      new ApiError(401, 'unauthorized', `trace link refused: ${why}`, undefined, {
        'WWW-Authenticate': 'Bearer realm="browser-telemetry"',
      })
    if (!payload || !sig || extra !== undefined) throw refused('malformed')
    const given = Buffer.from(sig, 'base64url')
    const want = this.mac(payload)
    if (given.length !== want.length || !timingSafeEqual(given, want))
      throw refused('bad signature (altered, or signed with a key this daemon no longer has)')
    let p: { b?: unknown; s?: unknown; u?: unknown; e?: unknown; t?: unknown; i?: unknown }
    try {
      p = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as typeof p
    } catch {
      throw refused('malformed')
    }
    if (
      typeof p.b !== 'string' ||
      typeof p.s !== 'number' ||
      typeof p.u !== 'number' ||
      typeof p.e !== 'number' ||
      typeof p.i !== 'string'
    )
      throw refused('malformed (a link without an id cannot be revoked: make a new one)')
    if (p.b !== browserId) throw refused('the link is for another browser')
    if (nowUs >= p.e) throw refused(`the link expired at ${new Date(p.e / 1000).toISOString()}`)
    // Signed under a longer maximum (the same key file): it lives no longer than a new one may.
    if (p.e - nowUs > LINK_TTL_MAX_S * 1_000_000) throw refused(`the link outlives the ${LINK_TTL_MAX_S} s maximum`)
    if (revoked?.has(p.i, nowUs)) throw refused('the link was revoked')
    return {
      browserId: p.b,
      sinceUs: p.s,
      untilUs: p.u,
      expUs: p.e,
      linkId: p.i,
      ...(typeof p.t === 'string' ? { targetId: p.t } : {}),
    }
  }
}

/** Revoked link ids kept at most; past it, revoking answers 429 until the oldest can be forgotten. */
export const MAX_REVOKED_LINKS = 10_000

/**
 * Revoked link ids, each kept until every link it could name has expired (the longest lifetime
 * from the revocation), in a file of the data dir when one is given: a link signed with a key file
 * outlives a restart, so must its revocation.
 */
export class TraceLinkRevocations {
  /** id -> Unix microseconds after which no link of that id is valid anyway. */
  private readonly ids = new Map<string, number>()

  private constructor(private readonly file: string | undefined) {}

  /** Kept in memory only: for a key that dies with the process (and tests). */
  static inMemory(): TraceLinkRevocations {
    return new TraceLinkRevocations(undefined)
  }

  static async open(file?: string, nowUs = Date.now() * 1000): Promise<TraceLinkRevocations> {
    const r = new TraceLinkRevocations(file)
    if (file === undefined) return r
    let rows: unknown
    try {
      rows = JSON.parse(await readFile(file, 'utf8'))
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return r
      throw new Error(`trace link revocations: cannot read ${file}: ${(err as Error).message}`)
    }
    if (Array.isArray(rows))
      for (const row of rows)
        if (Array.isArray(row) && typeof row[0] === 'string' && typeof row[1] === 'number' && row[1] > nowUs)
          r.ids.set(row[0], row[1])
    return r
  }

  has(id: string, nowUs: number): boolean {
    const until = this.ids.get(id)
    return until !== undefined && until > nowUs
  }

  get size(): number {
    return this.ids.size
  }

  /** Revokes one link id (idempotent); 429 while MAX_REVOKED_LINKS are still live. */
  async revoke(id: string, nowUs: number): Promise<void> {
    for (const [k, until] of this.ids) if (until <= nowUs) this.ids.delete(k)
    if (!this.ids.has(id) && this.ids.size >= MAX_REVOKED_LINKS) {
      const soonest = Math.min(...this.ids.values())
      const wait = Math.max(1, Math.ceil((soonest - nowUs) / 1_000_000))
      throw new ApiError(
        429,
        'too_many_requests',
        `${MAX_REVOKED_LINKS} trace links are revoked and not yet expired; retry later, or rotate --trace-link-key-file to end every link`,
        undefined,
        { 'Retry-After': String(wait) },
      )
    }
    this.ids.set(id, nowUs + LINK_TTL_MAX_S * 1_000_000)
    if (this.file !== undefined) await writeFileAtomic(this.file, JSON.stringify([...this.ids]))
  }
}
