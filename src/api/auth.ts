// Bearer tokens with scopes. Tokens are kept only as SHA-256 hashes and compared in constant time;
// no function here logs a token or puts one in an error message.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { ApiError } from './errors.js'
import type { Scope } from './operation.js'
import type { ApiMiddleware } from './route-table.js'

export const ALL_SCOPES: readonly Scope[] = ['read', 'write', 'publish', 'cdp']
/** RFC 6750 b64token. */
const TOKEN_SYNTAX = /^[A-Za-z0-9\-._~+/]+=*$/
const REALM = 'browser-telemetry'

export class TokenError extends Error {
  constructor(message: string) { super(message); this.name = 'TokenError' }
}

const hash = (token: string) => createHash('sha256').update(token, 'utf8').digest()

export class TokenSet {
  private readonly entries: { hash: Buffer; scopes: ReadonlySet<Scope> }[] = []

  add(token: string, scopes: Iterable<Scope>): void {
    if (!TOKEN_SYNTAX.test(token)) throw new TokenError('a token must be 1 or more characters of A-Z a-z 0-9 - . _ ~ + / (RFC 6750)')
    this.entries.push({ hash: hash(token), scopes: new Set(scopes) })
  }

  get size(): number { return this.entries.length }

  /**
   * Scopes of a presented token, or undefined when unknown. Compares the hash against every entry
   * with timingSafeEqual and never exits early, so timing says nothing about which token (if any) matched.
   */
  lookup(token: string): ReadonlySet<Scope> | undefined {
    const h = hash(token)
    let found: ReadonlySet<Scope> | undefined
    for (const e of this.entries) {
      if (timingSafeEqual(h, e.hash) && !found) found = e.scopes
    }
    return found
  }
}

function parseScopes(text: string, where: string): Scope[] {
  const out: Scope[] = []
  for (const raw of text.split(',')) {
    const s = raw.trim()
    if (s === '') continue
    if (!(ALL_SCOPES as readonly string[]).includes(s)) throw new TokenError(`${where}: unknown scope ${JSON.stringify(s)} (allowed: ${ALL_SCOPES.join(', ')})`)
    out.push(s as Scope)
  }
  if (out.length === 0) throw new TokenError(`${where}: no scope given (expected "<token> <scope>[,<scope>...]")`)
  return out
}

/** Token file: one `<token> <scope>[,<scope>...]` per line; blank lines and `#` comments ignored. */
export function parseTokenFile(text: string, name = 'token file'): { token: string; scopes: Scope[] }[] {
  const out: { token: string; scopes: Scope[] }[] = []
  text.split(/\r?\n/).forEach((line, i) => {
    const l = line.trim()
    if (l === '' || l.startsWith('#')) return
    const where = `${name} line ${i + 1}`
    const [token, ...rest] = l.split(/\s+/)
    if (rest.length === 0) throw new TokenError(`${where}: no scope given (expected "<token> <scope>[,<scope>...]")`)
    if (!TOKEN_SYNTAX.test(token!)) throw new TokenError(`${where}: the token has characters outside RFC 6750 (A-Z a-z 0-9 - . _ ~ + /)`)
    out.push({ token: token!, scopes: parseScopes(rest.join(''), where) })
  })
  return out
}

export interface LoadedTokens {
  tokens: TokenSet
  /** Set when no token was configured and one was generated or reused from `<dataDir>/token`. */
  generated?: { token: string; path: string; created: boolean }
}

/**
 * The token set of a daemon: `--token` (all scopes) plus `--token-file` entries. With neither, a
 * token with all scopes is generated once and kept in `<dataDir>/token` (mode 0600), reused on restart.
 */
export async function loadTokens(opts: { token?: string; tokenFile?: string; dataDir: string }): Promise<LoadedTokens> {
  const tokens = new TokenSet()
  if (opts.token !== undefined) {
    try { tokens.add(opts.token.trim(), ALL_SCOPES) } catch (err) { throw new TokenError(`--token: ${(err as Error).message}`) }
  }
  if (opts.tokenFile !== undefined) {
    let text: string
    try { text = await readFile(opts.tokenFile, 'utf8') } catch (err) {
      throw new TokenError(`--token-file: cannot read ${opts.tokenFile}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
    }
    const entries = parseTokenFile(text, opts.tokenFile)
    if (entries.length === 0) throw new TokenError(`--token-file: ${opts.tokenFile} lists no tokens`)
    for (const e of entries) tokens.add(e.token, e.scopes)
  }
  if (tokens.size > 0) return { tokens }
  const path = join(opts.dataDir, 'token')
  let token: string | undefined
  let created = false
  try {
    token = (await readFile(path, 'utf8')).trim()
    if (!TOKEN_SYNTAX.test(token)) throw new TokenError(`${path} does not hold a valid token; delete it to generate a new one`)
    if (((await stat(path)).mode & 0o077) !== 0) await chmod(path, 0o600)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    token = 'bt_' + randomBytes(32).toString('base64url') // a prefix: never starts with '-', easy to spot in leaks
    await mkdir(opts.dataDir, { recursive: true })
    // 'wx': never overwrite a token another process just wrote.
    await writeFile(path, token + '\n', { mode: 0o600, flag: 'wx' })
    created = true
  }
  tokens.add(token, ALL_SCOPES)
  return { tokens, generated: { token, path, created } }
}

function unauthorized(message: string, error?: 'invalid_request' | 'invalid_token'): ApiError {
  const challenge = error ? `Bearer realm="${REALM}", error="${error}"` : `Bearer realm="${REALM}"`
  return new ApiError(401, 'unauthorized', message, undefined, { 'WWW-Authenticate': challenge })
}

/** Koa middleware: sets ctx.state.scopes from `Authorization: Bearer <token>`, or answers 401. */
export function bearerAuth(tokens: TokenSet): ApiMiddleware {
  return async (ctx, next) => {
    const header = ctx.get('authorization')
    if (header === '') throw unauthorized('missing bearer token: send "Authorization: Bearer <token>"')
    const m = /^Bearer +(\S+) *$/i.exec(header)
    if (!m || !TOKEN_SYNTAX.test(m[1]!)) throw unauthorized('malformed Authorization header: expected "Bearer <token>"', 'invalid_request')
    const scopes = tokens.lookup(m[1]!)
    if (!scopes) throw unauthorized('unknown bearer token', 'invalid_token')
    ctx.state.scopes = scopes
    await next()
  }
}
