// The Web Vitals collector's rules on a fake session (the real page script is
// test/collectors-vitals.test.ts): when a vital is stored (poor at once, FCP/TTFB when reported, the
// rest when the page is left, hidden, closed or the collector detached), deltas, ratings by the
// published thresholds, and the bounds on what a page may send.
import t from 'tap'
import { fakeSession } from './helpers/fake-session.js'
import {
  createVitalsCollector,
  MAX_FRAMES_PER_REPORT,
  MAX_VITALS_PAYLOAD_CHARS,
  parseVitalsPayload,
} from '../collectors/vitals.js'
import { Bounds } from '../src/pipeline/bounds.js'
import { webVitalRating } from '../src/events/index.js'
import type { EventInput } from '../src/pipeline/pipeline.js'

function setup() {
  const collector = createVitalsCollector()
  const fake = fakeSession('page', method =>
    Promise.resolve(method === 'Page.getFrameTree' ? { frameTree: { frame: { id: 'T1' } } } : {}),
  )
  const emitted: EventInput[] = []
  const emit = (e: EventInput) => {
    emitted.push(e)
    return { accepted: true } as never
  }
  const report = (payload: unknown) =>
    fake.fire('Runtime.bindingCalled', {
      name: collector.bindingName,
      payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
    })
  const vitals = () =>
    emitted
      .filter(e => e.type === 'page_web_vital')
      .map(e => {
        const d = e.data as { name: string; value: number; rating: string; delta: number; nav_seq?: number }
        return [d.name, d.value, d.rating, d.delta, d.nav_seq]
      })
  return { collector, fake, emit, emitted, report, vitals }
}
const vital = (n: string, v: number, i = `v6-${n}`) => ({ n, v, i, t: 'navigate', a: {} })

t.test('ratings by the published thresholds (a value on a threshold is still the better rating)', async t => {
  t.same(
    [
      ['LCP', 2500],
      ['LCP', 2501],
      ['LCP', 4000],
      ['LCP', 4001],
      ['CLS', 0.1],
      ['CLS', 0.25],
      ['CLS', 0.26],
      ['INP', 200],
      ['INP', 500],
      ['INP', 501],
      ['FCP', 1800],
      ['FCP', 3001],
      ['TTFB', 800],
      ['TTFB', 1801],
    ].map(([n, v]) => webVitalRating(n as 'LCP', v as number)),
    [
      'good',
      'needs-improvement',
      'needs-improvement',
      'poor',
      'good',
      'needs-improvement',
      'poor',
      'good',
      'needs-improvement',
      'poor',
      'good',
      'poor',
      'good',
      'poor',
    ],
  )
})

t.test('stored when: FCP/TTFB at once, poor at once, the rest when the page is left', async t => {
  const s = setup()
  const detach = await s.collector.attach!(s.fake.session, s.emit)
  s.fake.fire('Page.frameNavigated', { frame: { id: 'T1', loaderId: 'L1', url: 'http://x/' } })
  s.report({ o: 1000, v: [vital('TTFB', 100), vital('FCP', 900), vital('LCP', 1200), vital('CLS', 0)], f: [] })
  t.same(s.vitals(), [
    ['TTFB', 100, 'good', 100, 1],
    ['FCP', 900, 'good', 900, 1],
  ])
  s.report({ o: 1000, v: [vital('INP', 300)], f: [] })
  s.report({ o: 1000, v: [vital('INP', 520), vital('LCP', 1500)], f: [] })
  t.same(s.vitals().slice(2), [['INP', 520, 'poor', 520, 1]], 'INP crossed into poor: stored while shown')
  s.report({ o: 1000, v: [vital('INP', 700)], f: [] })
  t.equal(s.vitals().length, 3, 'poor is stored once; later values wait for the page to be left')
  t.same(s.collector.latest('T1'), { TTFB: 100, FCP: 900, LCP: 1500, CLS: 0, INP: 700 })

  s.fake.fire('Page.frameNavigated', { frame: { id: 'T1', loaderId: 'L2', url: 'http://x/2' } })
  t.same(
    s.vitals().slice(3),
    [
      ['LCP', 1500, 'good', 1500, 1],
      ['CLS', 0, 'good', 0, 1],
      ['INP', 700, 'poor', 180, 1],
    ],
    'left: every value not stored yet, with the context of its page and the delta since the last stored',
  )
  // A late report of the left document is stored at once.
  s.report({ o: 1000, v: [vital('CLS', 0.05)], f: [] })
  t.same(s.vitals().slice(6), [['CLS', 0.05, 'good', 0.05, 1]])

  // The next document: hidden, then closed (detach).
  s.report({ o: 2000, v: [vital('LCP', 5000, 'b')], f: [] })
  t.same(s.vitals().slice(7), [['LCP', 5000, 'poor', 5000, 2]])
  s.report({ o: 2000, v: [vital('CLS', 0.3, 'c')], f: [], h: 1 })
  t.same(s.vitals().slice(8), [['CLS', 0.3, 'poor', 0.3, 2]], 'hidden: stored (poor here, so once)')
  s.report({ o: 2000, v: [vital('INP', 250, 'd')], f: [] })
  t.same(s.vitals().slice(9), [['INP', 250, 'needs-improvement', 250, 2]], 'after hidden: stored as it comes')
  s.report({ o: 3000, v: [vital('LCP', 800, 'e')], f: [] })
  detach()
  t.same(s.vitals().slice(10), [['LCP', 800, 'good', 800, 2]], 'the collector detached: the page counts as left')
  t.equal(s.fake.listeners(), 0, 'every listener removed')
})

t.test('back/forward cache: a new id for the same document measures afresh', async t => {
  const s = setup()
  await s.collector.attach!(s.fake.session, s.emit)
  s.report({ o: 1000, v: [vital('CLS', 0.01, 'a')], f: [] })
  s.fake.fire('Page.frameNavigated', { frame: { id: 'T1', loaderId: 'L2', url: 'http://x/2' } })
  s.fake.fire('Page.frameNavigated', { frame: { id: 'T1', loaderId: 'L1', url: 'http://x/' } })
  s.report({ o: 1000, v: [vital('CLS', 0.02, 'b')], f: [] })
  t.same(s.vitals(), [['CLS', 0.01, 'good', 0.01, 0]], 'the restored page holds its new value until left')
  s.fake.fire('Page.frameNavigated', { frame: { id: 'T1', loaderId: 'L3', url: 'http://x/3' } })
  t.same(s.vitals().slice(1), [['CLS', 0.02, 'good', 0.02, 2]], 'a new id: its delta counts from zero')
})

t.test('hostile payloads: bounded, reduced to known keys, validated', async t => {
  const bounds = new Bounds()
  const frame = (i: number) => ({
    start_time: 1000 + i,
    duration: 60,
    blocking_duration: 10,
    scripts: [{ source_url: 'http://x/a.js', duration: 55, evil: 'x' }],
    extra: 1,
  })
  const flood = parseVitalsPayload(
    JSON.stringify({ o: 1, v: [], f: Array.from({ length: 500 }, (_, i) => frame(i)) }),
    bounds,
  )
  t.equal(flood?.frames.length, MAX_FRAMES_PER_REPORT, 'at most 20 frames per report')
  t.equal(flood?.overCap, 500 - MAX_FRAMES_PER_REPORT)
  t.same(flood?.frames[0], {
    start_time: 1000,
    duration: 60,
    blocking_duration: 10,
    scripts: [{ source_url: 'http://x/a.js', duration: 55 }],
  })
  t.equal(parseVitalsPayload('x'.repeat(MAX_VITALS_PAYLOAD_CHARS + 1), bounds), undefined, 'too long: dropped unparsed')
  t.equal(parseVitalsPayload('{', bounds), undefined)
  t.equal(parseVitalsPayload(JSON.stringify({ o: 'x', v: [], f: [] }), bounds), undefined)
  const bad = parseVitalsPayload(
    JSON.stringify({
      o: 1,
      v: [
        { n: 'XYZ', v: 1, i: 'a' },
        { n: 'LCP', v: -1, i: 'a' },
        { n: 'LCP', v: 5, i: 'a', a: { element: 'e'.repeat(5000), nope: 1 } },
      ],
      f: [{ duration: 'slow', scripts: [] }],
    }),
    bounds,
  )
  t.equal(bad?.invalid, 3, 'unknown name, negative value, malformed frame')
  t.same(bad?.vitals, [{ name: 'LCP', value: 5, id: 'a', attribution: { element: 'e'.repeat(1024) } }], 'cut to 1 KiB')

  // A report of 500 frames through the collector: exactly 20 events, the rest counted.
  const s = setup()
  await s.collector.attach!(s.fake.session, s.emit)
  s.report({ o: 1, v: [], f: Array.from({ length: 500 }, (_, i) => frame(i)) })
  t.equal(s.emitted.filter(e => e.type === 'page_long_animation_frame').length, MAX_FRAMES_PER_REPORT)
  t.same(s.collector.stats, { reports: 1, invalid: 0, framesOverCap: 480 })
  // What the page left out itself (it keeps 20 between two reports) is counted too.
  s.report({ o: 1, v: [], f: [frame(1)], d: 35 })
  t.same(s.collector.stats, { reports: 2, invalid: 0, framesOverCap: 515 })
})

t.test('pages only: workers and iframes get nothing', async t => {
  const collector = createVitalsCollector()
  for (const type of ['iframe', 'worker'] as const) {
    const fake = fakeSession(type)
    await collector.attach!(fake.session, () => ({}) as never)
    t.same(fake.sent, [], `${type}: no binding, no script`)
  }
})
