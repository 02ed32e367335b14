// service_crashed for --watch-unit systemd units: `systemctl show` parsing, the per-unit rules
// (startup / running / gave_up, crashes hidden between polls) and the polling shell with a fake runner.
import t from 'tap'
import {
  parseSystemctlShow,
  stepUnit,
  UnitWatcher,
  UNIT_PROPERTIES,
  type UnitStatus,
  type UnitTrack,
} from '../collectors/system-units.js'
import type { EventInput } from '../src/pipeline/pipeline.js'
import { validateData } from '../src/events/index.js'
import { fakeAccepted } from './helpers/store.js'

const st = (o: Partial<UnitStatus>): UnitStatus => ({
  unit: 'xvfb.service',
  loadState: 'loaded',
  activeState: 'active',
  subState: 'running',
  mainPid: 100,
  execMainPid: 100,
  result: 'success',
  nRestarts: 0,
  execMainStatus: 0,
  ...o,
})

/** Runs observations through stepUnit; returns the crashes of each step (the first is the baseline). */
function run(observations: Partial<UnitStatus>[]) {
  let track: UnitTrack | undefined
  return observations.map(o => {
    const r = stepUnit(track, st(o))
    track = r.track
    return r.crashes.map(({ service_name, phase, pid }) =>
      pid === undefined ? { service_name, phase } : { service_name, phase, pid },
    )
  })
}

t.test('parseSystemctlShow: one block per unit, keys in any order', async t => {
  const text = [
    'MainPID=4242',
    'ActiveState=active',
    'SubState=running',
    'LoadState=loaded',
    'ExecMainPID=4242',
    'Result=success',
    'NRestarts=3',
    'ExecMainStatus=0',
    '',
    'LoadState=not-found',
    'ActiveState=inactive',
    'SubState=dead',
    'MainPID=0',
    'ExecMainPID=0',
    'Result=success',
    'NRestarts=0',
    'ExecMainStatus=0',
    '',
  ].join('\n')
  t.same(parseSystemctlShow(text, ['a.service', 'nope.service']), [
    {
      unit: 'a.service',
      loadState: 'loaded',
      activeState: 'active',
      subState: 'running',
      mainPid: 4242,
      execMainPid: 4242,
      result: 'success',
      nRestarts: 3,
      execMainStatus: 0,
    },
    {
      unit: 'nope.service',
      loadState: 'not-found',
      activeState: 'inactive',
      subState: 'dead',
      mainPid: 0,
      execMainPid: 0,
      result: 'success',
      nRestarts: 0,
      execMainStatus: 0,
    },
  ])
  // Old systemd without NRestarts: the field is absent, not 0.
  t.equal(parseSystemctlShow('ActiveState=active\nMainPID=1', ['x'])[0]!.nRestarts, undefined)
})

t.test('stepUnit rules', async t => {
  const u = 'xvfb.service'
  t.same(run([{}, { mainPid: 100 }]), [[], []], 'steady: nothing')
  t.same(
    run([{ activeState: 'failed', subState: 'failed', mainPid: 0, result: 'exit-code' }]),
    [[]],
    'already failed at start: baseline only',
  )

  t.same(
    run([
      {},
      { activeState: 'activating', subState: 'auto-restart', mainPid: 0, result: 'signal' },
      { activeState: 'active', subState: 'running', mainPid: 101, nRestarts: 1 },
    ]),
    [[], [{ service_name: u, phase: 'running', pid: 100 }], []],
    'crash seen in auto-restart, restart not double counted',
  )

  t.same(
    run([{}, { mainPid: 102, nRestarts: 1, result: 'signal' }]),
    [[], [{ service_name: u, phase: 'running', pid: 100 }]],
    'crash and restart between two polls (NRestarts grew)',
  )

  t.same(
    run([{}, { mainPid: 105, nRestarts: 3 }]),
    [
      [],
      [
        { service_name: u, phase: 'running', pid: 100 },
        { service_name: u, phase: 'running' },
        { service_name: u, phase: 'running' },
      ],
    ],
    'three hidden crashes: three events, only the first pid is known',
  )

  t.same(
    run([
      { activeState: 'activating', subState: 'start', mainPid: 200, execMainPid: 200 },
      { activeState: 'activating', subState: 'auto-restart', mainPid: 0, result: 'exit-code' },
      { activeState: 'activating', subState: 'start', mainPid: 201, nRestarts: 1 },
      { activeState: 'failed', subState: 'failed', mainPid: 0, nRestarts: 1, result: 'exit-code' },
    ]),
    [
      [],
      [{ service_name: u, phase: 'startup', pid: 200 }],
      [],
      [
        { service_name: u, phase: 'startup', pid: 201 },
        { service_name: u, phase: 'gave_up' },
      ],
    ],
    'dies before becoming active: startup; then the supervisor gives up',
  )

  t.same(
    run([
      {},
      { activeState: 'failed', subState: 'failed', mainPid: 0, result: 'core-dump' },
      { activeState: 'failed', subState: 'failed', mainPid: 0, result: 'core-dump' },
      { activeState: 'active', subState: 'running', mainPid: 300 },
      { activeState: 'failed', subState: 'failed', mainPid: 0, result: 'signal' },
    ]),
    [
      [],
      [
        { service_name: u, phase: 'running', pid: 100 },
        { service_name: u, phase: 'gave_up' },
      ],
      [],
      [],
      [
        { service_name: u, phase: 'running', pid: 300 },
        { service_name: u, phase: 'gave_up' },
      ],
    ],
    'Restart=no: running + gave_up, once per failure',
  )

  t.same(
    run([
      { activeState: 'activating', subState: 'auto-restart', mainPid: 0, result: 'exit-code', nRestarts: 4 },
      { activeState: 'failed', subState: 'failed', mainPid: 0, result: 'start-limit-hit', nRestarts: 5 },
    ]),
    [[], [{ service_name: u, phase: 'gave_up' }]],
    'start-limit-hit after a restart loop: gave_up',
  )

  t.same(
    run([
      {},
      { activeState: 'deactivating', subState: 'stop-sigterm' },
      { activeState: 'inactive', subState: 'dead', mainPid: 0, result: 'success' },
    ]),
    [[], [], []],
    'clean stop: nothing',
  )

  for (const crashes of run([{}, { mainPid: 0, activeState: 'failed', subState: 'failed', result: 'signal' }])) {
    for (const c of crashes) t.same(validateData('service_crashed', c), [], 'valid service_crashed data')
  }
})

t.test('UnitWatcher: one systemctl call per poll, events with source, failures said once', async t => {
  const outputs: (string | Error)[] = []
  const calls: string[][] = []
  const emitted: EventInput[] = []
  const warnings: string[] = []
  const logger = {
    warn: (_o: unknown, m: string) => warnings.push(m),
    info: () => undefined,
    debug: () => undefined,
  } as never
  const block = (o: Record<string, string | number>) =>
    Object.entries(o)
      .map(([k, v]) => `${k}=${v}`)
      .join('\n')
  const unitA = (o: Record<string, string | number> = {}) =>
    block({
      LoadState: 'loaded',
      ActiveState: 'active',
      SubState: 'running',
      MainPID: 500,
      ExecMainPID: 500,
      Result: 'success',
      NRestarts: 0,
      ExecMainStatus: 0,
      ...o,
    })
  const w = new UnitWatcher({
    units: ['a.service', 'gone.service'],
    emit: e => {
      emitted.push(e)
      return fakeAccepted(e)
    },
    logger,
    intervalMs: 3_600_000,
    run: async args => {
      calls.push(args)
      const o = outputs.shift()!
      if (o instanceof Error) throw o
      return o
    },
  })
  t.teardown(() => w.stop())
  const gone = block({ LoadState: 'not-found', ActiveState: 'inactive', SubState: 'dead', MainPID: 0 })
  outputs.push(`${unitA()}\n\n${gone}\n`)
  await w.start()
  t.same(calls, [['show', '-p', UNIT_PROPERTIES.join(','), '--', 'a.service', 'gone.service']])
  t.same(warnings, ['--watch-unit: no such systemd unit'])
  t.same(emitted, [], 'baseline emits nothing')

  outputs.push(new Error('System has not been booted with systemd'), new Error('again'))
  await w.poll()
  await w.poll()
  t.same(
    warnings.filter(m => m.startsWith('cannot query')),
    ['cannot query systemd for --watch-unit units'],
    'said once',
  )

  outputs.push(
    `${unitA({ ActiveState: 'activating', SubState: 'auto-restart', MainPID: 0, Result: 'signal', ExecMainStatus: 9 })}\n\n${gone}`,
  )
  await w.poll()
  t.same(emitted, [
    {
      type: 'service_crashed',
      data: { service_name: 'a.service', phase: 'running', pid: 500 },
      source: { kind: 'local_process', event: 'systemd', metadata: { result: 'signal', exit_status: '9' } },
    },
  ])
})
