// Which scripts and maps may be loaded, and how. A stack's script URLs and the maps they name are
// written by the page (`//# sourceURL=`, `//# sourceMappingURL=`), so a hostile page could aim the
// daemon at whatever listens inside the VM (the CDP port, the proxy, cloud metadata). The rule:
//
// - http(s) only (data: URLs are decoded, never fetched);
// - through the page (Chromium, the page's cookies) only a URL of the page's own origin when that
//   origin is itself a loopback or private address or a localhost name: the user browsed there on
//   purpose, and Chromium resolves localhost names to loopback whatever DNS says. A page on a host
//   name that merely resolves to a private address does not count (DNS can change its answer);
// - everything else is fetched by the daemon itself (direct-fetch.ts), without cookies: an address
//   literal must be public, a name is resolved when connecting and refused unless every address it
//   resolves to is public (that is the address connected to, so a changing answer cannot slip past),
//   and each redirect is put through this rule again before it is followed.
import { isIP } from 'node:net'

/** Why a URL may not be fetched. */
export type UrlRefusal = { reason: 'refused_url' | 'private_address'; message: string }
/** How a URL may be fetched: through the page (its frame and cookies) or by the daemon alone. */
export type FetchRoute = { via: 'page' | 'daemon' } | { via: 'refused'; refusal: UrlRefusal }

/** Names Chromium answers with loopback itself, without asking DNS (trailing dots allowed). */
const LOCAL_NAME = /^(?:(?:.+\.)?localhost|localhost\.localdomain|localhost6|localhost6\.localdomain6)\.*$/

/** A localhost name, however written: `localhost.`, `a.localhost`, `x.localhost.`. */
export function isLocalName(host: string): boolean {
  return LOCAL_NAME.test(host.toLowerCase())
}

/**
 * Whether a URL host (as `URL.hostname` gives it: IPv6 in brackets) is a localhost name or a
 * non-public address literal. Other names are resolved when connecting (isPublicAddress).
 */
export function isPrivateHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '')
  if (isLocalName(h)) return true
  return isIP(h) !== 0 && !isPublicAddress(h)
}

/**
 * Whether an address (IPv4 dotted, or IPv6) is public. Anything that does not parse is not: the
 * rule fails closed. IPv6 is public only in 2000::/3 (global unicast), with the IPv4 embedded in
 * 6to4 checked and Teredo refused; IPv4-mapped, -compatible and NAT64 forms are their IPv4's.
 */
export function isPublicAddress(address: string): boolean {
  const v = isIP(address)
  if (v === 4) return publicV4(address.split('.').map(Number))
  if (v !== 6) return false
  const g = v6Groups(address)
  if (!g) return false
  const embedded = [g[6]! >> 8, g[6]! & 255, g[7]! >> 8, g[7]! & 255]
  const zeros = (n: number) => g.slice(0, n).every(x => x === 0)
  // ::ffff:a.b.c.d (mapped), ::a.b.c.d (compatible), 64:ff9b::a.b.c.d (NAT64).
  if (zeros(5) && (g[5] === 0xffff || g[5] === 0)) return publicV4(embedded)
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every(x => x === 0)) return publicV4(embedded)
  if ((g[0]! & 0xe000) !== 0x2000) return false
  if (g[0] === 0x2002) return publicV4([g[1]! >> 8, g[1]! & 255, g[2]! >> 8, g[2]! & 255])
  if (g[0] === 0x2001 && g[1] === 0) return false // Teredo: tunnels to an IPv4 it does not show
  return true
}

/** The eight 16-bit groups of an IPv6 address (a dotted IPv4 tail allowed), or undefined. */
function v6Groups(address: string): number[] | undefined {
  let s = address.toLowerCase().replace(/%.*$/, '')
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(s)
  if (tail) {
    const [a, b, c, d] = tail[1]!.split('.').map(Number) as [number, number, number, number]
    s = `${s.slice(0, -tail[1]!.length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const halves = s.split('::')
  if (halves.length > 2) return undefined
  const part = (p: string) => (p === '' ? [] : p.split(':').map(x => parseInt(x, 16)))
  const head = part(halves[0]!)
  const rest = halves.length === 2 ? part(halves[1]!) : []
  const fill = 8 - head.length - rest.length
  if (fill < 0 || (halves.length === 1 && fill !== 0)) return undefined
  const out = [...head, ...new Array<number>(halves.length === 2 ? fill : 0).fill(0), ...rest]
  return out.length === 8 && out.every(x => Number.isInteger(x) && x >= 0 && x <= 0xffff) ? out : undefined
}

function publicV4(p: number[]): boolean {
  const [a, b, c] = p as [number, number, number, number]
  return !(
    a === 0 || // "this network": 0.0.0.0 reaches the host's own listeners
    a === 10 ||
    a === 127 ||
    (a === 100 && b >= 64 && b <= 127) || // carrier-grade NAT
    (a === 169 && b === 254) || // link-local, cloud metadata
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168) ||
    (a === 192 && b === 0 && c === 0) || // IETF protocol assignments
    (a === 198 && (b === 18 || b === 19)) || // benchmarking
    a >= 224 // multicast, reserved, broadcast
  )
}

/**
 * The rule for one URL, `pageUrl` being the document (or worker) whose frames named it; a redirect
 * is checked with no page (never through the page). See the file's comment.
 */
export function fetchRoute(url: URL, pageUrl: string | undefined): FetchRoute {
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return refused('refused_url', `${url.protocol} URLs are not fetched (http and https only)`)
  const page = parse(pageUrl)
  if (page && (page.protocol === 'http:' || page.protocol === 'https:') && isPrivateHost(page.hostname))
    if (page.origin === url.origin) return { via: 'page' }
  if (!isPrivateHost(url.hostname)) return { via: 'daemon' }
  return refused(
    'private_address',
    `${url.host} is a private address${page ? ` outside the page's origin (${page.origin})` : ''}`,
  )
}

function refused(reason: UrlRefusal['reason'], message: string): FetchRoute {
  return { via: 'refused', refusal: { reason, message } }
}

function parse(u: string | undefined): URL | undefined {
  if (u === undefined) return undefined
  try {
    return new URL(u)
  } catch {
    return undefined
  }
}

/** The origin of a page URL, when it has one (`null` origins have none). */
export function originOf(u: string | undefined): string | undefined {
  const o = parse(u)?.origin
  return o && o !== 'null' ? o : undefined
}
