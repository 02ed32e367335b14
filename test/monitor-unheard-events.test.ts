// Events of the collector-only domains (Runtime, Network, PerformanceTimeline) that no session has a
// handler for are dropped unparsed by the connection, and delivered again as soon as one subscribes.
// Real Chromium: the interaction category alone enables Runtime (for its binding), so the page's
// console messages arrive while no console collector listens.
import t from 'tap'
import { startCollecting } from './helpers/collector-harness.js'
import { createInteractionCollector } from '../collectors/interaction.js'
import { fixedCapture } from '../src/monitor/index.js'

t.test('console messages nobody listens to are never parsed; a later subscriber hears the next ones', async t => {
  const h = await startCollecting(t, [createInteractionCollector()], {
    capture: fixedCapture(['interaction']),
  })
  const page = h.firstPage()
  // Count the CDP messages parsed that carry one of our markers (the client parses with JSON.parse).
  const parse = JSON.parse
  const parsed: string[] = []
  JSON.parse = ((text: string, reviver?: Parameters<typeof parse>[1]) => {
    const m = /"method":"Runtime.consoleAPICalled".*marker-(\d)/.exec(text)
    if (m) parsed.push(m[1]!)
    return parse(text, reviver)
  }) as typeof JSON.parse
  t.teardown(() => {
    JSON.parse = parse
  })
  // Chromium sends a console event before the answer of the evaluate that logged it: once the
  // answer is in, the event was handled (or dropped).
  const log = (n: number) => page.send('Runtime.evaluate', { expression: `console.log('marker-${n}')` })
  await log(1)
  t.same(parsed, [], 'no handler anywhere: dropped unparsed')
  const got: unknown[] = []
  const off = page.on('Runtime.consoleAPICalled', p => got.push(p.args[0]?.value))
  await log(2)
  t.same([parsed, got], [['2'], ['marker-2']], 'a subscriber hears the next message')
  off()
  await log(3)
  t.same([parsed, got], [['2'], ['marker-2']], 'unsubscribed: dropped again')
  t.same(
    h.events.map(e => e.type).filter(type => type.startsWith('console')),
    [],
    'no console category, no console events',
  )
})
