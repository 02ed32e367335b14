// A script whose served map is valid VLQ pointing nowhere (a source index past `sources`, a
// negative line): every console error it raises is stored, its frames raw, against real Chromium.
import t from 'tap'
import type { Envelope } from '../src/events/index.js'
import { driveThroughProxy, startTestDaemon } from './helpers/agent-driver.js'
import { startServer, waitFor } from './helpers/http.js'
import { tempDir } from './helpers/store.js'

t.setTimeout(60_000)

t.test('errors of a script whose map points nowhere are stored, unmapped', async t => {
  // Segment [0, 5, 0, 0] on every line: source 5 of 1.
  const map = JSON.stringify({ version: 3, sources: ['app.ts'], names: [], mappings: 'AKAA;AKAA;AKAA;AKAA' })
  const js = [
    'function fail() { throw new TypeError("inner") }',
    'function report() { try { fail() } catch (e) { console.error(new Error("outer", { cause: e })) } }',
    'setTimeout(function first() { throw new Error("uncaught first") }, 0)',
    'setTimeout(report, 300)',
    '//# sourceMappingURL=app.js.map',
  ].join('\n')
  const site = await startServer(t, {
    '/': '<!doctype html><link rel="icon" href="data:,"><script src="/app.js"></script>',
    '/app.js': (_q, s) => (s.writeHead(200, { 'content-type': 'text/javascript' }), s.end(js)),
    '/app.js.map': (_q, s) => (s.writeHead(200, { 'content-type': 'application/json' }), s.end(map)),
  })
  const dir = await tempDir(t)
  const { d, stored } = await startTestDaemon(t, [
    ...['--listen', '127.0.0.1:0', '--data-dir', dir, '--proxy-listen', '127.0.0.1:0'],
  ])
  const { pw, page } = await driveThroughProxy(d)
  await page.goto(site.url)
  const errors = (all: Envelope[]) => all.filter(e => e.event.type === 'console_error')
  // The uncaught error first: by the time of the second, the map is learned and applied on capture.
  const all = await waitFor(
    async () => {
      const s = await stored()
      return errors(s).length >= 2 && s
    },
    20_000,
    'both errors stored',
  )
  await pw.close()
  t.same(
    errors(all).map(e => (e.event.data as { text: string }).text.split('\n')[0]),
    ['Uncaught Error: uncaught first', 'Error: outer'],
    'the uncaught error and the console.error with its cause, both stored',
  )
  t.equal(d.pipeline.stats.invalid, 0, 'nothing dropped as invalid')
  const outer = errors(all)[1]!.event.data as { stack_trace: { callFrames: { original?: unknown }[] } }
  t.same(
    outer.stack_trace.callFrames.map(f => f.original),
    outer.stack_trace.callFrames.map(() => undefined),
    'raw frames',
  )
})
