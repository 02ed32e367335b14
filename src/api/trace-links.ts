// Signed trace links: a read-only credential for one trace (one browser, one window, one target)
// that travels in a URL, so a viewer in another origin (trace.playwright.dev) can fetch the trace
// without the bearer token, which never appears in a URL. The credential is an HMAC-SHA256 over its
// own terms with the daemon's link key; it names what it grants, so it is useless for any other
// route or window, and it dies with its expiry or with the key (rotating the key revokes every link).
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { ApiError } from './errors.js'

/** What a link grants: the trace of this window of this browser (and target), until `expUs`. */
export interface TraceLinkGrant {
  browserId: string
  sinceUs: number
  untilUs: number
  targetId?: string
  /** Unix microseconds. */
  expUs: number
}

/** The signed credential's query parameter on the trace route. */
export const LINK_PARAM = 'link'
export const LINK_TTL_DEFAULT_S = 900
export const LINK_TTL_MAX_S = 86_400
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
        ...(g.targetId ? { t: g.targetId } : {}),
      }),
    ).toString('base64url')
    return `${payload}.${this.mac(payload).toString('base64url')}`
  }

  /** The grant of a credential, or a 401 saying why not (unsigned, altered, expired, another browser). */
  verify(credential: string, browserId: string, nowUs: number): TraceLinkGrant {
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
    let p: { b?: unknown; s?: unknown; u?: unknown; e?: unknown; t?: unknown }
    try {
      p = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as typeof p
    } catch {
      throw refused('malformed')
    }
    if (typeof p.b !== 'string' || typeof p.s !== 'number' || typeof p.u !== 'number' || typeof p.e !== 'number')
      throw refused('malformed')
    if (p.b !== browserId) throw refused('the link is for another browser')
    if (nowUs >= p.e) throw refused(`the link expired at ${new Date(p.e / 1000).toISOString()}`)
    return {
      browserId: p.b,
      sinceUs: p.s,
      untilUs: p.u,
      expUs: p.e,
      ...(typeof p.t === 'string' ? { targetId: p.t } : {}),
    }
  }
}
