import t from 'tap'
import { parseServeConfig, ConfigError, envName, SERVE_OPTIONS } from '../src/config/config.js'
import { parseDuration } from '../src/util/duration.js'
import { COMPONENTS } from '../src/config/options.js'
import { parseSize } from '../src/util/size.js'

t.test('durations', async t => {
  t.equal(parseDuration('250ms'), 250)
  t.equal(parseDuration('2s'), 2000)
  t.equal(parseDuration('90s'), 90_000)
  t.equal(parseDuration('1h30m'), 5_400_000)
  t.equal(parseDuration('7d'), 604_800_000)
  t.equal(parseDuration('0'), 0)
  for (const bad of ['', '5', 'abc', '5x', '-5m', '1h 30m', 'm5']) t.equal(parseDuration(bad), undefined, bad)
})

t.test('sizes', async t => {
  t.equal(parseSize('65536'), 65536)
  t.equal(parseSize('64KiB'), 65536)
  t.equal(parseSize('1MiB'), 1048576)
  t.equal(parseSize('4GiB'), 4 * 1024 ** 3)
  t.equal(parseSize('1.5k'), 1536)
  t.equal(parseSize('12 parsecs'), undefined)
})

t.test('the documented defaults (docs/configuration.md, docs/architecture.md)', async t => {
  const c = parseServeConfig([], {})
  t.same(c.listen, { host: '127.0.0.1', port: 10222 })
  t.equal(c.dataDir, './data')
  t.equal(c.browser.launch, true, 'launch is the default without --cdp-url')
  t.same(c.proxy.listen, { host: '127.0.0.1', port: 9222 })
  t.same(c.browser.reconnect, { attempts: 10, initialBackoffMs: 250, maxBackoffMs: 2000 })
  t.equal(c.streams.keepaliveMs, 15000)
  t.notOk(c.capture.categories.includes('screenshot'))
  t.equal(c.capture.maxEnvelopeBytes, 1024 * 1024)
  t.same(c.store.retention, { maxBytes: 512 * 1024 * 1024, maxAgeMs: 7 * 86_400_000 })
})

t.test('each component of the option table but daemon is the ServeConfig group of its name', async t => {
  const c = parseServeConfig([], {})
  // The daemon component: ServeConfig's top-level fields (warnings come from no option).
  const topLevel = ['listen', 'dataDir', 'browserId', 'logLevel', 'exportMaxConcurrent', 'warnings']
  t.same(
    Object.keys(c)
      .filter(k => !topLevel.includes(k))
      .sort(),
    Object.keys(COMPONENTS)
      .filter(k => k !== 'daemon')
      .sort(),
  )
})

t.test('flags beat env; env twins work', async t => {
  const env = {
    BROWSER_TELEMETRY_LISTEN: '0.0.0.0:8080',
    BROWSER_TELEMETRY_CDP_URL: 'http://127.0.0.1:9333',
    BROWSER_TELEMETRY_UPLOAD_ROOT: '/a,/b',
  }
  const c = parseServeConfig(['--listen', '127.0.0.1:9000'], env)
  t.same(c.listen, { host: '127.0.0.1', port: 9000 })
  t.equal(c.browser.cdpUrl, 'http://127.0.0.1:9333')
  t.equal(c.browser.launch, false)
  t.same(c.uploads.roots, ['/a', '/b'])
  t.same(parseServeConfig(['--upload-root', '/x', '--upload-root', '/y'], env).uploads.roots, ['/x', '/y'])
  t.equal(envName('reconnect-max-backoff'), 'BROWSER_TELEMETRY_RECONNECT_MAX_BACKOFF')
  t.equal(parseServeConfig(['--proxy-listen', 'off'], {}).proxy.listen, undefined)
})

t.test(
  'max backoff below the initial backoff clamps the initial to it, with a warning; flag order does not matter',
  async t => {
    const warning = '--reconnect-initial-backoff 5000ms is above --reconnect-max-backoff 1000ms; using 1000ms for both'
    for (const argv of [
      ['--reconnect-initial-backoff', '5s', '--reconnect-max-backoff', '1s'],
      ['--reconnect-max-backoff', '1s', '--reconnect-initial-backoff', '5s'],
    ]) {
      const c = parseServeConfig(argv, {})
      t.same([c.browser.reconnect.initialBackoffMs, c.browser.reconnect.maxBackoffMs], [1000, 1000], argv.join(' '))
      t.same(c.warnings, [warning], argv.join(' '))
    }
    // Only the max given (the case): below the default initial 250ms.
    const onlyMax = parseServeConfig(['--reconnect-max-backoff', '100ms'], {})
    t.same([onlyMax.browser.reconnect.initialBackoffMs, onlyMax.browser.reconnect.maxBackoffMs], [100, 100])
    t.same(onlyMax.warnings, [
      '--reconnect-initial-backoff 250ms is above --reconnect-max-backoff 100ms; using 100ms for both',
    ])
    const fromEnv = parseServeConfig([], { BROWSER_TELEMETRY_RECONNECT_MAX_BACKOFF: '100ms' })
    t.same([fromEnv.browser.reconnect.initialBackoffMs, fromEnv.browser.reconnect.maxBackoffMs], [100, 100])
    t.equal(fromEnv.warnings.length, 1)
    // Equal and ordinary values: kept as given, no warning.
    const equal = parseServeConfig(['--reconnect-initial-backoff', '1s', '--reconnect-max-backoff', '1s'], {})
    t.same(
      [equal.browser.reconnect.initialBackoffMs, equal.browser.reconnect.maxBackoffMs, equal.warnings],
      [1000, 1000, []],
    )
    t.same(parseServeConfig([], {}).warnings, [])
  },
)

t.test('--network-body-max-bytes: a size, 0 = no bodies; anything else below 1 byte is an error', async t => {
  t.equal(parseServeConfig([], {}).capture.networkBodyMaxBytes, 65536)
  t.equal(parseServeConfig(['--network-body-max-bytes', '0'], {}).capture.networkBodyMaxBytes, 0)
  t.equal(parseServeConfig([], { BROWSER_TELEMETRY_NETWORK_BODY_MAX_BYTES: '0' }).capture.networkBodyMaxBytes, 0)
  t.equal(parseServeConfig(['--network-body-max-bytes', '1KiB'], {}).capture.networkBodyMaxBytes, 1024)
  for (const bad of ['-1', '-0', 'none', ''])
    t.throws(
      () => parseServeConfig([`--network-body-max-bytes=${bad}`], {}),
      /--network-body-max-bytes: expected a size/,
      bad,
    )
})

t.test(
  'load shedding: the backlog bound (flag, env twin, at least 1 MiB); the page cap follows --retention-bytes',
  async t => {
    const d = parseServeConfig([], {}).shedding
    t.equal(d.backlogBytes, 16 * 1024 * 1024)
    t.equal(d.pageCapBytes, 128 * 1024 * 1024, 'a quarter of the default 512 MiB retention')
    t.equal(d.pageCapWindowMs, 600_000)
    t.equal(parseServeConfig(['--shed-backlog-bytes', '64MiB'], {}).shedding.backlogBytes, 64 * 1024 * 1024)
    t.equal(
      parseServeConfig([], { BROWSER_TELEMETRY_SHED_BACKLOG_BYTES: '2MiB' }).shedding.backlogBytes,
      2 * 1024 * 1024,
    )
    t.equal(parseServeConfig(['--retention-bytes', '1GiB'], {}).shedding.pageCapBytes, 256 * 1024 * 1024)
    t.throws(
      () => parseServeConfig(['--shed-backlog-bytes', '1000KiB'], {}),
      /--shed-backlog-bytes: at least 1048576 bytes/,
    )
  },
)

t.test('bad values are clear errors', async t => {
  const cases: [string[], RegExp][] = [
    [['--listen', 'nope'], /--listen: expected host:port/],
    [['--categories', 'console,bogus'], /unknown category "bogus"/],
    [['--categories', 'monitor'], /monitor is not configurable/],
    [['--reconnect-initial-backoff', 'soon'], /--reconnect-initial-backoff: expected a duration/],
    [['--max-envelope-bytes', 'big'], /expected a size/],
    [['--max-envelope-bytes', '4095'], /--max-envelope-bytes: at least 4096 bytes/],
    [['--cdp-url', 'localhost:9222'], /--cdp-url/],
    [['--frobnicate'], /Unknown option '--frobnicate'/],
    [['--browser-id', 'a b'], /--browser-id/],
  ]
  for (const [argv, re] of cases) t.throws(() => parseServeConfig(argv, {}), re, argv.join(' '))
  t.throws(() => parseServeConfig(['--reconnect-attempts', '-1'], {}), ConfigError)
  t.ok(Object.keys(SERVE_OPTIONS).length >= 30)
})

t.test('fleet shipping: off by default; --nats-* flags and env twins; bad values are clear errors', async t => {
  t.equal(parseServeConfig([], {}).nats, undefined, 'shipping off without --nats-url')
  t.same(parseServeConfig(['--nats-url', 'nats://10.0.0.1:4222, nats://10.0.0.2:4222'], {}).nats, {
    servers: ['nats://10.0.0.1:4222', 'nats://10.0.0.2:4222'],
    credsFile: undefined,
    tokenFile: undefined,
    tlsCa: undefined,
    stream: 'BROWSER_TELEMETRY',
    subjectPrefix: 'telemetry',
    duplicateWindowMs: 120_000,
    maxAgeMs: 7 * 86_400_000,
    maxBytes: 0,
    replicas: 1,
    maxInFlight: 256,
  })
  const fromEnv = parseServeConfig([], {
    BROWSER_TELEMETRY_NATS_URL: 'tls://nats.example:4443',
    BROWSER_TELEMETRY_NATS_CREDS_FILE: '/etc/bt/nats.creds',
    BROWSER_TELEMETRY_NATS_TOKEN_FILE: '/etc/bt/nats.token',
    BROWSER_TELEMETRY_NATS_TLS_CA: '/etc/bt/ca.pem',
    BROWSER_TELEMETRY_NATS_STREAM: 'FLEET',
    BROWSER_TELEMETRY_NATS_SUBJECT_PREFIX: 'fleet.eu',
    BROWSER_TELEMETRY_NATS_DUPLICATE_WINDOW: '10m',
    BROWSER_TELEMETRY_NATS_MAX_AGE: '0',
    BROWSER_TELEMETRY_NATS_MAX_BYTES: '10GiB',
    BROWSER_TELEMETRY_NATS_REPLICAS: '3',
    BROWSER_TELEMETRY_NATS_MAX_IN_FLIGHT: '64',
  }).nats
  t.same(fromEnv, {
    servers: ['tls://nats.example:4443'],
    credsFile: '/etc/bt/nats.creds',
    tokenFile: '/etc/bt/nats.token',
    tlsCa: '/etc/bt/ca.pem',
    stream: 'FLEET',
    subjectPrefix: 'fleet.eu',
    duplicateWindowMs: 600_000,
    maxAgeMs: 0,
    maxBytes: 10 * 1024 ** 3,
    replicas: 3,
    maxInFlight: 64,
  })
  const cases: [string[], RegExp][] = [
    [['--nats-url', 'http://x:4222'], /--nats-url: expected nats:\/\/host:port, got "http:\/\/x:4222"/],
    [['--nats-url', ','], /--nats-url: expected at least one/],
    [['--nats-url', 'nats://x:99999'], /--nats-url/],
    [['--nats-url', 'nats://x:4222', '--nats-stream', 'a.b'], /--nats-stream: letters, digits/],
    [['--nats-url', 'nats://x:4222', '--nats-subject-prefix', 'a.*'], /--nats-subject-prefix/],
    [['--nats-url', 'nats://x:4222', '--nats-subject-prefix', 'a..b'], /--nats-subject-prefix/],
    [['--nats-url', 'nats://x:4222', '--nats-duplicate-window', '30s'], /at least 2m/],
    [['--nats-url', 'nats://x:4222', '--nats-replicas', '7'], /at most 5/],
    [['--nats-url', 'nats://x:4222', '--nats-max-in-flight', '0'], /--nats-max-in-flight: expected an integer >= 1/],
  ]
  for (const [argv, re] of cases) t.throws(() => parseServeConfig(argv, {}), re, argv.join(' '))
})

t.test('serve and the client commands share one option parser and one help layout', async t => {
  const { COMMANDS } = await import('../src/cli.js')
  const help = COMMANDS.find(c => c.name === 'serve')!.usage
  t.match(help, /^Usage: browser-telemetry serve \[options\]\n/)
  for (const [flag, o] of Object.entries(SERVE_OPTIONS)) {
    const line = help.split('\n').find(l => l.trimStart().startsWith(`--${flag} `))
    t.ok(line, `--${flag} listed`)
    t.ok(line!.endsWith(`[${envName(flag)}]`), `--${flag} shows its env twin`)
    if (o.default !== undefined) t.ok(line!.includes(`(default ${o.default})`), `--${flag} shows its default`)
  }
  // Same parser, same strictness: an unknown flag and a flag without its value.
  t.throws(() => parseServeConfig(['--bogus'], {}), new ConfigError("Unknown option '--bogus'"))
  t.throws(() => parseServeConfig(['--listen'], {}), /Option '--listen <value>' argument missing/)
  t.throws(() => parseServeConfig(['stray'], {}), /Unexpected argument 'stray'/)
})
