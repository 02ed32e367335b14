// The capture plan (src/monitor/capture-plan.ts): exactly which domains, collectors, scripts,
// bodies and auto-attached targets each category set needs. Pure; the live switch against Chromium
// is test/capture-live.test.ts.
import t from 'tap'
import { capturePlan, planAttaches, type CapturePlan } from '../src/monitor/capture-plan.js'
import { autoAttachParams } from '../src/monitor/capture.js'
import type { TargetType } from '../src/events/index.js'

const TYPES: TargetType[] = ['page', 'iframe', 'worker', 'shared_worker', 'service_worker', 'background_page', 'other']

/** The whole plan as plain data: per target type "domains | collectors | script". */
function table(plan: CapturePlan): Record<string, unknown> {
  const byTarget: Record<string, string> = {}
  for (const type of TYPES) {
    const p = plan.byTarget(type)
    byTarget[type] =
      `${p.domains.join('+') || '-'} | ${p.collectors.join('+') || '-'} | ${p.interactionScript ? 'script' : '-'}`
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
      capturePlan([
        'console',
        'network',
        'page',
        'interaction',
        'control',
        'connection',
        'system',
        'captcha',
        'monitor',
      ]),
    ),
    {
      categories: ['console', 'network', 'page', 'interaction'],
      attachIframes: true,
      attachWorkers: true,
      bodies: true,
      maxPostDataSize: 65536,
      byTarget: {
        page: 'Page+Runtime+Network+PerformanceTimeline | console+network+page+interaction | script',
        iframe: 'Page+Runtime+Network+PerformanceTimeline | console+network+page+interaction | script',
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
  t.same(table(capturePlan(['console'])), {
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
  t.same(table(capturePlan(['network'])), {
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
  t.same(table(capturePlan(['page'])), {
    categories: ['page'],
    attachIframes: true,
    attachWorkers: false,
    bodies: false,
    maxPostDataSize: 0,
    byTarget: {
      page: 'Page+Runtime+PerformanceTimeline | page | -',
      iframe: 'Page+PerformanceTimeline | page | -',
      worker: '- | - | -',
      shared_worker: '- | - | -',
      service_worker: '- | - | -',
      background_page: 'Page | - | -',
      other: '- | - | -',
    },
  })
  // The binding is delivered only while Runtime is enabled.
  t.same(table(capturePlan(['interaction'])), {
    categories: ['interaction'],
    attachIframes: true,
    attachWorkers: false,
    bodies: false,
    maxPostDataSize: 0,
    byTarget: {
      page: 'Page+Runtime | interaction | script',
      iframe: 'Page+Runtime | interaction | script',
      worker: '- | - | -',
      shared_worker: '- | - | -',
      service_worker: '- | - | -',
      background_page: 'Page | - | -',
      other: '- | - | -',
    },
  })
  t.same(table(capturePlan(['screenshot'])), {
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
    const plan = capturePlan(cats)
    t.same(plan.categories, [], cats.join(','))
    t.same([plan.attachIframes, plan.attachWorkers, plan.bodies], [false, false, false])
    t.same(plan.byTarget('page'), { domains: ['Page'], collectors: [], interactionScript: false })
    t.same(plan.byTarget('worker'), { domains: [], collectors: [], interactionScript: false })
  }
})

t.test('body cap: 0 turns bodies off; the cap is Network.enable maxPostDataSize', async t => {
  t.same(
    [
      capturePlan(['network'], { bodyMaxBytes: 0 }).bodies,
      capturePlan(['network'], { bodyMaxBytes: 0 }).maxPostDataSize,
    ],
    [false, 0],
  )
  t.same(
    [
      capturePlan(['network'], { bodyMaxBytes: 1000 }).bodies,
      capturePlan(['network'], { bodyMaxBytes: 1000 }).maxPostDataSize,
    ],
    [true, 1000],
  )
  t.equal(capturePlan(['console'], { bodyMaxBytes: 1000 }).maxPostDataSize, 0)
})

t.test('console + interaction share Runtime; unknown names are ignored', async t => {
  t.same(capturePlan(['interaction', 'console', 'bogus']).byTarget('page'), {
    domains: ['Page', 'Runtime'],
    collectors: ['console', 'interaction'],
    interactionScript: true,
  })
  t.same(capturePlan(['page', 'network']).byTarget('page').domains, [
    'Page',
    'Runtime',
    'Network',
    'PerformanceTimeline',
  ])
  t.same(capturePlan(['page', 'network']).byTarget('iframe').domains, ['Page', 'Network', 'PerformanceTimeline'])
})

t.test('auto-attach filter follows the plan', async t => {
  const ignored = [
    { type: 'browser', exclude: true },
    { type: 'tab', exclude: true },
    { type: 'browser_ui', exclude: true },
  ]
  t.same(autoAttachParams(capturePlan(['console'])), {
    autoAttach: true,
    waitForDebuggerOnStart: true,
    flatten: true,
    filter: [...ignored, {}],
  })
  t.same(autoAttachParams(capturePlan(['page'])).filter, [
    ...ignored,
    { type: 'worker', exclude: true },
    { type: 'shared_worker', exclude: true },
    { type: 'service_worker', exclude: true },
    {},
  ])
  t.same(autoAttachParams(capturePlan(['screenshot'])).filter, [
    ...ignored,
    { type: 'iframe', exclude: true },
    { type: 'worker', exclude: true },
    { type: 'shared_worker', exclude: true },
    { type: 'service_worker', exclude: true },
    {},
  ])
  const page = capturePlan(['page'])
  t.same(
    TYPES.map(ty => planAttaches(page, ty)),
    [true, true, false, false, false, true, true],
  )
  const none = capturePlan([])
  t.same(
    TYPES.map(ty => planAttaches(none, ty)),
    [true, false, false, false, false, true, true],
  )
})
