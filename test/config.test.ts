import t from 'tap'
import { parseServeConfig, ConfigError, envName, SERVE_OPTIONS } from '../src/config.js'
import { parseDuration } from '../src/util/duration.js'
import { parseSize } from '../src/util/size.js'

t.test('durations', async (t) => {
  t.equal(parseDuration('250ms'), 250)
  t.equal(parseDuration('2s'), 2000)
  t.equal(parseDuration('90s'), 90_000)
  t.equal(parseDuration('1h30m'), 5_400_000)
  t.equal(parseDuration('7d'), 604_800_000)
  t.equal(parseDuration('0'), 0)
  for (const bad of ['', '5', 'abc', '5x', '-5m', '1h 30m', 'm5']) t.equal(parseDuration(bad), undefined, bad)
})

t.test('sizes', async (t) => {
  t.equal(parseSize('65536'), 65536)
  t.equal(parseSize('64KiB'), 65536)
  t.equal(parseSize('1MiB'), 1048576)
  t.equal(parseSize('4GiB'), 4 * 1024 ** 3)
  t.equal(parseSize('1.5k'), 1536)
  t.equal(parseSize('12 parsecs'), undefined)
})

t.test('defaults match DESIGN.md', async (t) => {
  const c = parseServeConfig([], {})
  t.same(c.listen, { host: '127.0.0.1', port: 10222 })
  t.equal(c.dataDir, './data')
  t.equal(c.launch, true, 'launch is the default without --cdp-url')
  t.same(c.proxyListen, { host: '127.0.0.1', port: 9222 })
  t.same([c.reconnectAttempts, c.reconnectInitialBackoffMs, c.reconnectMaxBackoffMs], [10, 250, 2000])
  t.equal(c.streamKeepaliveMs, 15000)
  t.notOk(c.categories.includes('screenshot'))
  t.equal(c.maxEnvelopeBytes, 1024 * 1024)
  t.same([c.retentionBytes, c.retentionAgeMs], [512 * 1024 * 1024, 7 * 86_400_000])
})

t.test('flags beat env; env twins work', async (t) => {
  const env = { BROWSER_TELEMETRY_LISTEN: '0.0.0.0:8080', BROWSER_TELEMETRY_CDP_URL: 'http://127.0.0.1:9333', BROWSER_TELEMETRY_UPLOAD_ROOT: '/a,/b' }
  const c = parseServeConfig(['--listen', '127.0.0.1:9000'], env)
  t.same(c.listen, { host: '127.0.0.1', port: 9000 })
  t.equal(c.cdpUrl, 'http://127.0.0.1:9333')
  t.equal(c.launch, false)
  t.same(c.uploadRoots, ['/a', '/b'])
  t.same(parseServeConfig(['--upload-root', '/x', '--upload-root', '/y'], env).uploadRoots, ['/x', '/y'])
  t.equal(envName('reconnect-max-backoff'), 'BROWSER_TELEMETRY_RECONNECT_MAX_BACKOFF')
  t.equal(parseServeConfig(['--proxy-listen', 'off'], {}).proxyListen, undefined)
})

t.test('bad values are clear errors', async (t) => {
  const cases: [string[], RegExp][] = [
    [['--listen', 'nope'], /--listen: expected host:port/],
    [['--categories', 'console,bogus'], /unknown category "bogus"/],
    [['--categories', 'monitor'], /monitor is not configurable/],
    [['--reconnect-initial-backoff', 'soon'], /--reconnect-initial-backoff: expected a duration/],
    [['--reconnect-initial-backoff', '5s', '--reconnect-max-backoff', '1s'], /must be >=/],
    [['--max-envelope-bytes', 'big'], /expected a size/],
    [['--cdp-url', 'localhost:9222'], /--cdp-url/],
    [['--frobnicate'], /Unknown option '--frobnicate'/],
    [['--browser-id', 'a b'], /--browser-id/],
  ]
  for (const [argv, re] of cases) t.throws(() => parseServeConfig(argv, {}), re, argv.join(' '))
  t.throws(() => parseServeConfig(['--reconnect-attempts', '-1'], {}), ConfigError)
  t.ok(Object.keys(SERVE_OPTIONS).length >= 30)
})
