// The page_layout_settled / page_navigation_settled rule on a fake clock.
import t from 'tap'
import { FakeTimers } from './helpers/fake-timers.js'
import { NavigationSettleRule } from '../collectors/page-settle.js'

function setup(navSeq = 1) {
  const timers = new FakeTimers()
  const out: string[] = []
  const rule = new NavigationSettleRule(
    {
      timers,
      onLayoutSettled: n => out.push(`layout ${n} @${timers.now()}`),
      onNavigationSettled: n => out.push(`navigation ${n} @${timers.now()}`),
    },
    navSeq,
  )
  return { timers, out, rule }
}

t.test('layout settles 1 s after load; navigation settles once DCL and layout both did', async t => {
  const { timers, out, rule } = setup()
  rule.onDomContentLoaded(1)
  timers.advance(100)
  rule.onLoad(1)
  timers.advance(999)
  t.same(out, [])
  timers.advance(1)
  t.same(out, ['layout 1 @1100', 'navigation 1 @1100'])
  timers.advance(10_000)
  rule.onLoad(1)
  rule.onLayoutShift(1)
  timers.advance(5000)
  t.equal(out.length, 2, 'each fires once per navigation')
})

t.test('each shift after load restarts the 1 s; shifts before load are ignored', async t => {
  const { timers, out, rule } = setup()
  rule.onLayoutShift(1) // before load: no timer
  t.equal(rule.armed, false)
  rule.onDomContentLoaded(1)
  rule.onLoad(1)
  timers.advance(600)
  rule.onLayoutShift(1)
  timers.advance(600)
  rule.onLayoutShift(1)
  timers.advance(999)
  t.same(out, [])
  timers.advance(1)
  t.same(out, ['layout 1 @2200', 'navigation 1 @2200'])
})

t.test('navigation_settled waits for DCL of the same navigation', async t => {
  const { timers, out, rule } = setup()
  rule.onLoad(1) // attached after DCL: layout settles, navigation never does
  timers.advance(1000)
  t.same(out, ['layout 1 @1000'])
  rule.onDomContentLoaded(2) // DCL of a newer navigation resets; nothing fires for 1
  rule.onLoad(2)
  timers.advance(1000)
  t.same(out, ['layout 1 @1000', 'layout 2 @2000', 'navigation 2 @2000'])
})

t.test('a new navigation cancels the old timer; a disposed rule never fires', async t => {
  const { timers, out, rule } = setup()
  rule.onDomContentLoaded(1)
  rule.onLoad(1)
  timers.advance(500)
  rule.navigate(2)
  t.equal(timers.pending, 0)
  timers.advance(5000)
  t.same(out, [])
  rule.onLoad(2)
  rule.onLayoutShift(1) // an event stamped with an older nav_seq resets nothing of 2's... it is just another navigation id
  rule.dispose()
  t.equal(timers.pending, 0)
  timers.advance(5000)
  rule.onDomContentLoaded(3)
  rule.onLoad(3)
  timers.advance(5000)
  t.same(out, [])
})
