// The small lifetime helpers every collector and the monitor share: withTimeout (timer always
// cleared, abort stops the wait), Disposer (symmetric, reverse order, late adds run at once,
// a throwing step never stops the others) and withDefaults (undefined never erases a default).
import t from 'tap'
import { FakeClock } from './helpers/fake-timers.js'
import { TimeoutError, withTimeout } from '../src/util/with-timeout.js'
import { Disposer } from '../src/util/disposer.js'
import { withDefaults } from '../src/util/defaults.js'

const outcome = (p: Promise<unknown>) =>
  p.then(
    v => ['resolved', v],
    (e: unknown) => ['rejected', e instanceof TimeoutError ? `TimeoutError ${e.message}` : String(e)],
  )

t.test('withTimeout: settles like the work, or rejects at ms; the timer never outlives it', async t => {
  const clock = new FakeClock()
  const fast = withTimeout(Promise.resolve(7), 1000, { timers: clock })
  t.same(await outcome(fast), ['resolved', 7])
  t.equal(clock.pending, 0, 'timer cleared on success')

  const failing = withTimeout(Promise.reject(new Error('boom')), 1000, { timers: clock })
  t.same(await outcome(failing), ['rejected', 'Error: boom'])
  t.equal(clock.pending, 0, 'timer cleared on failure')

  const never = new Promise<number>(() => undefined)
  const slow = outcome(withTimeout(never, 1000, { timers: clock, message: 'too slow' }))
  clock.advance(999)
  t.equal(clock.pending, 1)
  clock.advance(1)
  t.same(await slow, ['rejected', 'TimeoutError too slow'])
  t.equal(clock.pending, 0)

  const ctl = new AbortController()
  const aborted = outcome(withTimeout(never, 1000, { timers: clock, signal: ctl.signal }))
  ctl.abort(new Error('closing'))
  t.same(await aborted, ['rejected', 'Error: closing'], 'abort rejects at once with the reason')
  t.equal(clock.pending, 0, 'and clears the timer')
  t.same(
    await outcome(withTimeout(never, 1000, { timers: clock, signal: ctl.signal })),
    ['rejected', 'Error: closing'],
    'an aborted signal never starts a timer',
  )
  t.equal(clock.pending, 0)
})

t.test('Disposer: runs every step once, newest first; early removal; late adds run at once', async t => {
  const ran: string[] = []
  const errors: unknown[] = []
  const bag = new Disposer(e => errors.push(e))
  bag.add(() => ran.push('a'))
  const removeB = bag.add(() => ran.push('b'))
  bag.add(() => {
    throw new Error('c failed')
  })
  bag.add(() => ran.push('d'))
  removeB()
  removeB()
  t.same(ran, ['b'], 'removed early: run once, now')
  t.equal(bag.size, 3)
  bag.dispose()
  bag.dispose()
  t.same(ran, ['b', 'd', 'a'], 'reverse order, the throwing step did not stop the rest, idempotent')
  t.same(errors.map(String), ['Error: c failed'])
  t.equal(bag.size, 0)
  bag.add(() => ran.push('late'))
  t.same(ran.at(-1), 'late', 'added after dispose: run at once')
  t.equal(bag.size, 0)
})

t.test('withDefaults: undefined keeps the default, other falsy values override', async t => {
  const d = { pollMs: 500, path: '/dev/kmsg', kernelOnly: true }
  t.same(withDefaults(d, { pollMs: undefined, path: undefined }), d)
  t.same(withDefaults(d, { pollMs: 0, kernelOnly: false }), { pollMs: 0, path: '/dev/kmsg', kernelOnly: false })
  t.same(withDefaults(d, undefined), d)
  t.not(withDefaults(d, {}), d, 'a copy, never the defaults object itself')
})
