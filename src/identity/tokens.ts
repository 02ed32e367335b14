// Bearer tokens with scopes, and the daemon's token set from --token, --token-file or the generated
// token in the data dir. Tokens are kept only as SHA-256 hashes and compared in constant time;
// no function here logs a token or puts one in an error message.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { chmod, mkdir, readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { writeFileAtomic } from '../util/atomic-file.js'
import { TOKEN_SYNTAX } from '../util/bearer.js'

/** What a token may do: read telemetry, write (config, uploads, steps), publish events, reach CDP. */
export type Scope = 'read' | 'write' | 'publish' | 'cdp'

export const ALL_SCOPES: readonly Scope[] = ['read', 'write', 'publish', 'cdp']
/** RFC 6750 b64token. */

export class TokenError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'TokenError'
  }
}

const hash = (token: string) => createHash('sha256').update(token, 'utf8').digest()
/** Token names are safe to log and to store in events (audit); never the token itself. */
const TOKEN_NAME_SYNTAX = /^[A-Za-z0-9._:-]{1,64}$/

/** The name of a token without one: a short id derived from its hash (cannot be turned back into the token). */
export function tokenId(token: string): string {
  return 'sha256:' + hash(token).subarray(0, 6).toString('hex')
}

/** Who a request authenticated as: a loggable name and the token's scopes. */
export interface TokenIdentity {
  name: string
  scopes: ReadonlySet<Scope>
}

export class TokenSet {
  private readonly entries: { hash: Buffer; identity: TokenIdentity }[] = []

  add(token: string, scopes: Iterable<Scope>, name?: string): void {
    if (!TOKEN_SYNTAX.test(token))
      throw new TokenError('a token must be 1 or more characters of A-Z a-z 0-9 - . _ ~ + / (RFC 6750)')
    if (name !== undefined && !TOKEN_NAME_SYNTAX.test(name))
      throw new TokenError('a token name is 1-64 characters of A-Z a-z 0-9 . _ : -')
    this.entries.push({ hash: hash(token), identity: { name: name ?? tokenId(token), scopes: new Set(scopes) } })
  }

  get size(): number {
    return this.entries.length
  }

  /**
   * Scopes of a presented token, or undefined when unknown. Compares the hash against every entry
   * with timingSafeEqual and never exits early, so timing says nothing about which token (if any) matched.
   */
  lookup(token: string): ReadonlySet<Scope> | undefined {
    return this.identify(token)?.scopes
  }

  /** Name and scopes of a presented token (same constant-time scan as lookup). */
  identify(token: string): TokenIdentity | undefined {
    const h = hash(token)
    let found: TokenIdentity | undefined
    for (const e of this.entries) {
      if (timingSafeEqual(h, e.hash) && !found) found = e.identity
    }
    return found
  }
}

function parseScopes(text: string, where: string): Scope[] {
  const out: Scope[] = []
  for (const raw of text.split(',')) {
    const s = raw.trim()
    if (s === '') continue
    if (!(ALL_SCOPES as readonly string[]).includes(s))
      throw new TokenError(`${where}: unknown scope ${JSON.stringify(s)} (allowed: ${ALL_SCOPES.join(', ')})`)
    out.push(s as Scope)
  }
  if (out.length === 0) throw new TokenError(`${where}: no scope given (expected "<token> <scope>[,<scope>...]")`)
  return out
}

/**
 * Token file: one `<token> <scope>[,<scope>...] [<name>]` per line; blank lines and `#` comments ignored.
 * The optional name (letters, digits, `._:-`) is what audit events and logs show; without one a
 * hash-derived id (`sha256:<12 hex>`) is used.
 */
export function parseTokenFile(text: string, name = 'token file'): { token: string; scopes: Scope[]; name?: string }[] {
  const out: { token: string; scopes: Scope[]; name?: string }[] = []
  text.split(/\r?\n/).forEach((line, i) => {
    const l = line.trim()
    if (l === '' || l.startsWith('#')) return
    const where = `${name} line ${i + 1}`
    const [token, ...rest] = l.split(/\s+/)
    if (rest.length === 0)
      throw new TokenError(`${where}: no scope given (expected "<token> <scope>[,<scope>...] [<name>]")`)
    if (!TOKEN_SYNTAX.test(token!))
      throw new TokenError(`${where}: the token has characters outside RFC 6750 (A-Z a-z 0-9 - . _ ~ + /)`)
    // "a, b name": scopes may contain spaces after commas; a last word not after a comma is the name.
    const joined = rest.join(' ').replace(/\s*,\s*/g, ',')
    const [scopeText, tokenName, ...extra] = joined.split(' ')
    if (extra.length > 0) throw new TokenError(`${where}: expected "<token> <scope>[,<scope>...] [<name>]"`)
    if (tokenName !== undefined && !TOKEN_NAME_SYNTAX.test(tokenName))
      throw new TokenError(`${where}: a token name is 1-64 characters of A-Z a-z 0-9 . _ : -`)
    out.push({
      token: token!,
      scopes: parseScopes(scopeText!, where),
      ...(tokenName !== undefined ? { name: tokenName } : {}),
    })
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
    try {
      tokens.add(opts.token.trim(), ALL_SCOPES, 'token')
    } catch (err) {
      throw new TokenError(`--token: ${(err as Error).message}`)
    }
  }
  if (opts.tokenFile !== undefined) {
    let text: string
    try {
      text = await readFile(opts.tokenFile, 'utf8')
    } catch (err) {
      throw new TokenError(
        `--token-file: cannot read ${opts.tokenFile}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      )
    }
    const entries = parseTokenFile(text, opts.tokenFile)
    if (entries.length === 0) throw new TokenError(`--token-file: ${opts.tokenFile} lists no tokens`)
    for (const e of entries) tokens.add(e.token, e.scopes, e.name)
  }
  if (tokens.size > 0) return { tokens }
  const path = join(opts.dataDir, 'token')
  let token: string | undefined
  let created = false
  try {
    token = (await readFile(path, 'utf8')).trim()
    if (!TOKEN_SYNTAX.test(token))
      throw new TokenError(`${path} does not hold a valid token; delete it to generate a new one`)
    if (((await stat(path)).mode & 0o077) !== 0) await chmod(path, 0o600)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    token = 'bt_' + randomBytes(32).toString('base64url') // a prefix: never starts with '-', easy to spot in leaks
    await mkdir(opts.dataDir, { recursive: true, mode: 0o700 })
    // Whole or not at all (a full disk never leaves an empty token); exclusive: never overwrite a
    // token another process just wrote.
    try {
      await writeFileAtomic(path, token + '\n', { mode: 0o600, exclusive: true })
      created = true
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e
      token = (await readFile(path, 'utf8')).trim()
    }
  }
  tokens.add(token, ALL_SCOPES, 'generated')
  return { tokens, generated: { token, path, created } }
}
