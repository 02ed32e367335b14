// Token sets, the token file format, and the generated token kept in the data dir.
import t from 'tap'
import { chmod, readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { ALL_SCOPES, TokenError, TokenSet, loadTokens, parseTokenFile } from '../src/identity/tokens.js'
import { tempDir } from './helpers/store.js'

t.test('TokenSet: lookup by exact token, scopes kept apart', async t => {
  const set = new TokenSet()
  set.add('alpha-1', ['read'])
  set.add('beta_2', ['write', 'publish'])
  t.same([...set.lookup('alpha-1')!], ['read'])
  t.same([...set.lookup('beta_2')!].sort(), ['publish', 'write'])
  t.equal(set.lookup('alpha-'), undefined, 'prefix')
  t.equal(set.lookup('alpha-11'), undefined, 'extension')
  t.equal(set.lookup(''), undefined)
  t.throws(() => set.add('has space', ['read']), TokenError)
  t.throws(() => set.add('', ['read']), TokenError)
})

t.test('token file: "<token> <scope>[,<scope>]" per line, comments and blanks ignored', async t => {
  const entries = parseTokenFile(
    [
      '# control plane',
      'cp-token-1 read,write',
      '',
      '   agent-token   read   ',
      'pub-token publish, cdp',
      '\t# indented comment',
    ].join('\n'),
  )
  t.same(entries, [
    { token: 'cp-token-1', scopes: ['read', 'write'] },
    { token: 'agent-token', scopes: ['read'] },
    { token: 'pub-token', scopes: ['publish', 'cdp'] },
  ])
  const bad: [string, RegExp][] = [
    ['lonely-token', /line 1: no scope given/],
    ['tok read,admin', /line 1: unknown scope "admin"/],
    ['# c\ntok ,', /line 2: no scope given/],
    ['tok"x read', /line 1: the token has characters outside RFC 6750/],
  ]
  for (const [text, msg] of bad) {
    t.throws(() => parseTokenFile(text), { name: 'TokenError', message: msg }, text)
    try {
      parseTokenFile(text)
    } catch (err) {
      t.notMatch((err as Error).message, /lonely-token|tok"x/, 'error messages never echo a token')
    }
  }
})

t.test('loadTokens: flag token has every scope; file tokens have theirs; both together', async t => {
  const dir = await tempDir(t)
  const file = join(dir, 'tokens')
  await writeFile(file, 'reader-x read\nwriter-x write\n')
  const { tokens, generated } = await loadTokens({ token: 'flag-token', tokenFile: file, dataDir: dir })
  t.equal(generated, undefined, 'nothing generated when tokens are configured')
  t.same([...tokens.lookup('flag-token')!].sort(), [...ALL_SCOPES].sort())
  t.same([...tokens.lookup('reader-x')!], ['read'])
  t.same([...tokens.lookup('writer-x')!], ['write'])
  await t.rejects(stat(join(dir, 'token')), { code: 'ENOENT' })
  await t.rejects(loadTokens({ tokenFile: join(dir, 'missing'), dataDir: dir }), {
    name: 'TokenError',
    message: /--token-file: cannot read .*missing: ENOENT/,
  })
  await writeFile(file, '# nothing\n')
  await t.rejects(loadTokens({ tokenFile: file, dataDir: dir }), { name: 'TokenError', message: /lists no tokens/ })
})

t.test('loadTokens: with none configured, generate once into <dataDir>/token (0600) and reuse it', async t => {
  const dir = await tempDir(t)
  const first = await loadTokens({ dataDir: dir })
  t.ok(first.generated)
  t.equal(first.generated!.created, true)
  t.equal(first.generated!.path, join(dir, 'token'))
  t.match(
    first.generated!.token,
    /^bt_[A-Za-z0-9_-]{43}$/,
    '256 random bits, base64url, prefixed so it never starts with -',
  )
  t.equal((await stat(first.generated!.path)).mode & 0o777, 0o600)
  t.equal((await readFile(first.generated!.path, 'utf8')).trim(), first.generated!.token)
  t.same([...first.tokens.lookup(first.generated!.token)!].sort(), [...ALL_SCOPES].sort())

  const second = await loadTokens({ dataDir: dir })
  t.equal(second.generated!.created, false, 'reused on restart')
  t.equal(second.generated!.token, first.generated!.token)

  await chmod(first.generated!.path, 0o644)
  await loadTokens({ dataDir: dir })
  t.equal((await stat(first.generated!.path)).mode & 0o777, 0o600, 'loose permissions are tightened')

  await writeFile(first.generated!.path, 'not a token!\n')
  await t.rejects(loadTokens({ dataDir: dir }), { name: 'TokenError', message: /does not hold a valid token/ })
})
