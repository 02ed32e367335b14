// The capture plan (src/monitor/capture-plan.ts): exactly which domains, collectors, scripts,
// bodies and auto-attached targets each category set needs. Pure; the live switch against Chromium
// is test/capture-live.test.ts.
import t from 'tap'
import { capturePlan, checkCollectors, planAttaches, type CapturePlan } from '../src/monitor/capture-plan.js'
import { CAPTURE_NEEDS, createCollectors } from '../collectors/index.js'
import { Bounds } from '../src/pipeline/bounds.js'
import { silentLogger } from '../src/log.js'
import { autoAttachParams } from '../src/monitor/capture.js'
import type { TargetType } from '../src/events/index.js'

const TYPES: TargetType[] = ['page', 'iframe', 'worker', 'shared_worker', 'service_worker', 'background_page', 'other']

/** The whole plan as plain data: per target type "domains | collectors | script". */
function table(plan: CapturePlan): Record<string, unknown> {
  const byTarget: Record<string, string> = {}
  for (const type of TYPES) {
    const p = plan.byTarget(type)
    byTarget[type] =
      `${p.domains.join('+') || '-'} | ${p.collectors.join('+') || '-'} | ${p.pageScripts.join('+') || '-'}`
  }
  return {
    categories: plan.categories,
    attachIframes: plan.attachIframes,
    attachWorkers: plan.attachWorkers,
    bodies: plan.bodies,
    maxPostDataSize: plan.maxPostDataSize,
    byTarget,
  }
}

t.test('every category but screenshot (the default set)', async t => {
  t.same(
    table(
      capturePlan(
        ['console', 'network', 'page', 'interaction', 'control', 'connection', 'system', 'captcha', 'monitor'],
        CAPTURE_NEEDS,
      ),
    ),
    {
      categories: ['console', 'network', 'page', 'interaction'],
      attachIframes: true,
      attachWorkers: true,
      bodies: true,
      maxPostDataSize: 65536,
      byTarget: {
        page: 'Page+Runtime+Network+PerformanceTimeline | console+network+page+vitals+interaction | vitals+interaction',
        iframe: 'Page+Runtime+Network+PerformanceTimeline | console+network+page+interaction | interaction',
        worker: 'Runtime+Network | console+network | -',
        shared_worker: 'Runtime+Network | console+network | -',
        service_worker: 'Runtime+Network | console+network | -',
        background_page: 'Page+Runtime+Network | console+network | -',
        other: 'Runtime+Network | console+network | -',
      },
    },
  )
})

t.test('one category at a time', async t => {
  t.same(table(capturePlan(['console'], CAPTURE_NEEDS)), {
    categories: ['console'],
    attachIframes: true,
    attachWorkers: true,
    bodies: false,
    maxPostDataSize: 0,
    byTarget: {
      page: 'Page+Runtime | console | -',
      iframe: 'Page+Runtime | console | -',
      worker: 'Runtime | console | -',
      shared_worker: 'Runtime | console | -',
      service_worker: 'Runtime | console | -',
      background_page: 'Page+Runtime | console | -',
      other: 'Runtime | console | -',
    },
  })
  t.same(table(capturePlan(['network'], CAPTURE_NEEDS)), {
    categories: ['network'],
    attachIframes: true,
    attachWorkers: true,
    bodies: true,
    maxPostDataSize: 65536,
    byTarget: {
      page: 'Page+Network | network | -',
      iframe: 'Page+Network | network | -',
      worker: 'Network | network | -',
      shared_worker: 'Network | network | -',
      service_worker: 'Network | network | -',
      background_page: 'Page+Network | network | -',
      other: 'Network | network | -',
    },
  })
  // page never needs Network (page_navigation_settled is independent of network_idle); Runtime only
  // on pages, for the Web Vitals binding.
  t.same(table(capturePlan(['page'], CAPTURE_NEEDS)), {
    categories: ['page'],
    attachIframes: true,
    attachWorkers: false,
    bodies: false,
    maxPostDataSize: 0,
    byTarget: {
      page: 'Page+Runtime+PerformanceTimeline | page+vitals | vitals',
      iframe: 'Page+PerformanceTimeline | page | -',
      worker: '- | - | -',
      shared_worker: '- | - | -',
      service_worker: '- | - | -',
      background_page: 'Page | - | -',
      other: '- | - | -',
    },
  })
  // The binding is delivered only while Runtime is enabled.
  t.same(table(capturePlan(['interaction'], CAPTURE_NEEDS)), {
    categories: ['interaction'],
    attachIframes: true,
    attachWorkers: false,
    bodies: false,
    maxPostDataSize: 0,
    byTarget: {
      page: 'Page+Runtime | interaction | interaction',
      iframe: 'Page+Runtime | interaction | interaction',
      worker: '- | - | -',
      shared_worker: '- | - | -',
      service_worker: '- | - | -',
      background_page: 'Page | - | -',
      other: '- | - | -',
    },
  })
  t.same(table(capturePlan(['screenshot'], CAPTURE_NEEDS)), {
    categories: ['screenshot'],
    attachIframes: false,
    attachWorkers: false,
    bodies: false,
    maxPostDataSize: 0,
    byTarget: {
      page: 'Page | - | -',
      iframe: 'Page | - | -',
      worker: '- | - | -',
      shared_worker: '- | - | -',
      service_worker: '- | - | -',
      background_page: 'Page | - | -',
      other: '- | - | -',
    },
  })
})

t.test('categories without CDP work: pages only, Page only (context), nothing else', async t => {
  for (const cats of [[], ['control', 'connection', 'system', 'captcha'], ['monitor']]) {
    const plan = capturePlan(cats, CAPTURE_NEEDS)
    t.same(plan.categories, [], cats.join(','))
    t.same([plan.attachIframes, plan.attachWorkers, plan.bodies], [false, false, false])
    t.same(plan.byTarget('page'), { domains: ['Page'], collectors: [], pageScripts: [] })
    t.same(plan.byTarget('worker'), { domains: [], collectors: [], pageScripts: [] })
  }
})

t.test('body cap: 0 turns bodies off; the cap is Network.enable maxPostDataSize', async t => {
  t.same(
    [
      capturePlan(['network'], CAPTURE_NEEDS, { bodyMaxBytes: 0 }).bodies,
      capturePlan(['network'], CAPTURE_NEEDS, { bodyMaxBytes: 0 }).maxPostDataSize,
    ],
    [false, 0],
  )
  t.same(
    [
      capturePlan(['network'], CAPTURE_NEEDS, { bodyMaxBytes: 1000 }).bodies,
      capturePlan(['network'], CAPTURE_NEEDS, { bodyMaxBytes: 1000 }).maxPostDataSize,
    ],
    [true, 1000],
  )
  t.equal(capturePlan(['console'], CAPTURE_NEEDS, { bodyMaxBytes: 1000 }).maxPostDataSize, 0)
})

t.test('console + interaction share Runtime; unknown names are ignored', async t => {
  t.same(capturePlan(['interaction', 'console', 'bogus'], CAPTURE_NEEDS).byTarget('page'), {
    domains: ['Page', 'Runtime'],
    collectors: ['console', 'interaction'],
    pageScripts: ['interaction'],
  })
  t.same(capturePlan(['page', 'network'], CAPTURE_NEEDS).byTarget('page').domains, [
    'Page',
    'Runtime',
    'Network',
    'PerformanceTimeline',
  ])
  t.same(capturePlan(['page', 'network'], CAPTURE_NEEDS).byTarget('iframe').domains, [
    'Page',
    'Network',
    'PerformanceTimeline',
  ])
})

t.test('auto-attach filter follows the plan', async t => {
  const ignored = [
    { type: 'browser', exclude: true },
    { type: 'tab', exclude: true },
    { type: 'browser_ui', exclude: true },
  ]
  t.same(autoAttachParams(capturePlan(['console'], CAPTURE_NEEDS)), {
    autoAttach: true,
    waitForDebuggerOnStart: true,
    flatten: true,
    filter: [...ignored, {}],
  })
  t.same(autoAttachParams(capturePlan(['page'], CAPTURE_NEEDS)).filter, [
    ...ignored,
    { type: 'worker', exclude: true },
    { type: 'shared_worker', exclude: true },
    { type: 'service_worker', exclude: true },
    {},
  ])
  t.same(autoAttachParams(capturePlan(['screenshot'], CAPTURE_NEEDS)).filter, [
    ...ignored,
    { type: 'iframe', exclude: true },
    { type: 'worker', exclude: true },
    { type: 'shared_worker', exclude: true },
    { type: 'service_worker', exclude: true },
    {},
  ])
  const page = capturePlan(['page'], CAPTURE_NEEDS)
  t.same(
    TYPES.map(ty => planAttaches(page, ty)),
    [true, true, false, false, false, true, true],
  )
  const none = capturePlan([], CAPTURE_NEEDS)
  t.same(
    TYPES.map(ty => planAttaches(none, ty)),
    [true, false, false, false, false, true, true],
  )
})

t.test("the declarations the plan reads are the daemon's collectors' own, in list order", async t => {
  const built = createCollectors({
    bounds: new Bounds(),
    isEnabled: () => false,
    onCategoriesChanged: () => () => undefined,
    networkBodyMaxBytes: 65536,
    screenshotIntervalMs: 0,
    maxEnvelopeBytes: 1 << 20,
    recording: { sink: { put: () => undefined } as never, lastSeq: () => 0 },
    logger: silentLogger,
  })
  t.same(
    built.list.flatMap(c => (c.capture ? [{ name: c.name, capture: c.capture }] : [])),
    CAPTURE_NEEDS,
  )
  t.same(
    built.list.filter(c => !c.capture).map(c => c.name),
    ['screenshot', 'perf-trace'],
    'attached to every target whatever is on',
  )
})

t.test('a collector the plan cannot place is refused with the reason', async t => {
  const base = { targets: ['page'] as const, domains: [] as const }
  t.throws(() => checkCollectors([{ name: 'x', capture: { ...base, category: 'bogus' as never } }]), {
    message:
      "collector 'x': category 'bogus' is not one of console, network, page, interaction, control, connection, system, screenshot, captcha, monitor, recording",
  })
  t.throws(() => checkCollectors([{ name: 'x', capture: { category: 'page', targets: [], domains: [] } }]), {
    message: "collector 'x': declares no target types",
  })
  t.throws(() => checkCollectors([{ name: 'x', capture: { ...base, category: 'page', domains: ['DOM' as never] } }]), {
    message: "collector 'x': domain 'DOM' is not one of Page, Runtime, Network, PerformanceTimeline",
  })
  t.throws(() => checkCollectors([{ name: 'x' }, { name: 'x' }]), { message: "collector 'x' is listed twice" })
  t.doesNotThrow(() => checkCollectors(CAPTURE_NEEDS))
  // A new category's collector is placed from its declaration alone: no plan code names it.
  const plan = capturePlan(
    ['system'],
    [{ name: 'probe', capture: { category: 'system', targets: ['worker'], domains: ['Runtime'] } }],
  )
  t.same(plan.byTarget('worker'), { domains: ['Runtime'], collectors: ['probe'], pageScripts: [] })
  t.equal(plan.attachWorkers, true)
  t.equal(plan.attachIframes, false)
})
