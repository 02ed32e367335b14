// TargetCapture (src/monitor/capture.ts) on a real AttachedTarget over a scripted raw send: the exact
// commands of attach and of each live change, their order against collectors' attach/detach, and
// a change racing an attach. Chromium itself: test/capture-live.test.ts.
import t from 'tap'
import { Bounds } from '../src/pipeline/bounds.js'
import { AttachedTarget } from '../src/monitor/target-session.js'
import { ProtocolErrorLog } from '../src/monitor/protocol-error.js'
import { TargetCapture } from '../src/monitor/capture.js'
import { capturePlan } from '../src/monitor/capture-plan.js'
import { CAPTURE_NEEDS } from '../collectors/index.js'
import type { Collector, Detach } from '../src/monitor/types.js'
import { silentLogger } from '../src/log.js'
import { fakeAccepted } from './helpers/store.js'

/** The plan of these categories over the daemon's own collector declarations. */
const planOf = (categories: string[]) => capturePlan(categories, CAPTURE_NEEDS)
const ALL = planOf(['console', 'network', 'page', 'interaction'])

function harness(type = 'page') {
  const log: string[] = []
  /** Commands whose answer the test releases by hand (method -> release). */
  const held = new Map<string, () => void>()
  const holding = new Set<string>()
  const raw = ((method: string, params: unknown) => {
    log.push(params === undefined ? method : `${method} ${JSON.stringify(params)}`)
    if (!holding.has(method)) return Promise.resolve({})
    return new Promise(resolve =>
      held.set(method, () => {
        log.push(`answer ${method}`)
        resolve({})
      }),
    )
  }) as ConstructorParameters<typeof AttachedTarget>[0]
  const target = new AttachedTarget(
    raw,
    new ProtocolErrorLog({ logger: silentLogger }),
    silentLogger,
    new Bounds(),
    { targetId: 'T1', type, title: '', url: 'about:blank', attached: true, canAccessOpener: false },
    'S1',
    undefined,
  )
  /** A collector the plan places as the daemon's collector of that name (planned), or one always attached. */
  const collector = (name: string, planned = false, gate?: Promise<void>): Collector => ({
    name,
    capture: planned ? CAPTURE_NEEDS.find(c => c.name === name)?.capture : undefined,
    async attach(): Promise<Detach> {
      log.push(`attach ${name}`)
      if (gate) await gate
      return () => {
        log.push(`detach ${name}`)
      }
    },
  })
  return { log, target, holding, held, collector }
}
const emit = (e: Parameters<typeof fakeAccepted>[0]) => fakeAccepted(e)

t.test("attach: the plan's domains in order, then every listed collector (and those without a category)", async t => {
  const h = harness()
  const cap = new TargetCapture(h.target, {
    collectors: [h.collector('console', true), h.collector('page', true), h.collector('screenshot')],
    emit,
    logger: silentLogger,
  })
  const plan = planOf(['console', 'network'])
  const domains = cap.enableDomains(plan)
  const collectors = cap.attachCollectors(plan)
  await Promise.all([domains, collectors])
  t.same(h.log, [
    'Page.enable',
    'Runtime.enable',
    'Network.enable {"maxPostDataSize":65536}',
    'attach console',
    'attach screenshot',
  ])
  t.same(cap.counts(), { domains: 3, collectors: 2 })
})

t.test('a worker gets no Page; PerformanceTimeline only on documents', async t => {
  const h = harness('worker')
  const cap = new TargetCapture(h.target, { collectors: [], emit, logger: silentLogger })
  await cap.enableDomains(ALL)
  t.same(h.log, ['Runtime.enable', 'Network.enable {"maxPostDataSize":65536}'])
})

t.test('live: off detaches then disables; on enables, waits for the answer, then attaches', async t => {
  const h = harness()
  const cap = new TargetCapture(h.target, {
    collectors: [
      h.collector('console', true),
      h.collector('network', true),
      h.collector('page', true),
      h.collector('interaction', true),
      h.collector('screenshot'),
    ],
    emit,
    logger: silentLogger,
  })
  await Promise.all([cap.enableDomains(ALL), cap.attachCollectors(ALL)])
  h.log.length = 0

  await cap.apply(planOf(['page']))
  t.same(
    h.log,
    ['detach console', 'detach network', 'detach interaction', 'Network.disable'],
    'Page, PerformanceTimeline and Runtime (the Web Vitals binding) kept; the screenshot collector untouched',
  )
  h.log.length = 0

  await cap.apply(planOf(['console']))
  t.same(h.log, ['detach page', 'PerformanceTimeline.enable {"eventTypes":[]}', 'attach console'])
  h.log.length = 0

  // interaction joins console: Runtime is on already, nothing to enable.
  await cap.apply(planOf(['console', 'interaction']))
  t.same(h.log, ['attach interaction'])
  h.log.length = 0

  // The same plan again: nothing at all.
  await cap.apply(planOf(['console', 'interaction']))
  t.same(h.log, [])

  h.holding.add('Network.enable')
  const applying = cap.apply(planOf(['console', 'interaction', 'network']))
  await new Promise(r => setImmediate(r))
  t.same(
    h.log,
    ['Network.enable {"maxPostDataSize":65536}'],
    'the network collector waits for the enable answer (Chromium replays before it)',
  )
  h.held.get('Network.enable')!()
  await applying
  t.same(h.log, ['Network.enable {"maxPostDataSize":65536}', 'answer Network.enable', 'attach network'])
})

t.test(
  'changes queue per target; a collector switched off while attaching is detached once its attach ends',
  async t => {
    const h = harness()
    let release!: () => void
    const gate = new Promise<void>(r => {
      release = r
    })
    const cap = new TargetCapture(h.target, {
      collectors: [h.collector('interaction', true, gate)],
      emit,
      logger: silentLogger,
    })
    const plan = planOf(['interaction'])
    void cap.enableDomains(plan)
    const attaching = cap.attachCollectors(plan)
    const off = cap.apply(planOf([]))
    await new Promise(r => setImmediate(r))
    t.same(
      h.log,
      ['Page.enable', 'Runtime.enable', 'attach interaction'],
      'the change waits for the attach in progress',
    )
    release()
    await attaching
    await off
    t.same(h.log.slice(3), ['detach interaction', 'Runtime.disable'])
    t.same(cap.counts(), { domains: 1, collectors: 0 })
  },
)

t.test('target closed: every collector detaches once, later changes send nothing', async t => {
  const h = harness()
  const cap = new TargetCapture(h.target, {
    collectors: [h.collector('console', true), h.collector('screenshot')],
    emit,
    logger: silentLogger,
  })
  await Promise.all([cap.enableDomains(ALL), cap.attachCollectors(ALL)])
  h.log.length = 0
  h.target.close()
  h.target.close()
  t.same(h.log.sort(), ['detach console', 'detach screenshot'])
  await cap.apply(planOf([]))
  t.same(h.log.length, 2, 'nothing sent after close')
})
