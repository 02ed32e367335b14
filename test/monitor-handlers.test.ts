// The event -> handlers registry every CDP session dispatches through: a throwing handler is logged
// with the event and the session's label and never stops the others; unsubscribing drops empty sets.
import t from 'tap'
import { Writable } from 'node:stream'
import { createLogger } from '../src/log.js'
import { HandlerRegistry, ListenedEvents } from '../src/monitor/handlers.js'

t.test('a throwing handler is logged (event, session) and the next handler still runs', async t => {
  const lines: Record<string, unknown>[] = []
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(JSON.parse(String(chunk)))
      done()
    },
  })
  const logger = createLogger('warn', undefined, sink)
  const reg = new HandlerRegistry()
  const heard: unknown[] = []
  reg.add('Runtime.consoleAPICalled', () => {
    throw new Error('boom')
  })
  const off = reg.add('Runtime.consoleAPICalled', p => heard.push(p))
  reg.dispatch('Runtime.consoleAPICalled', { n: 1 }, logger, 'target T1')
  reg.dispatch('Page.loadEventFired', { n: 2 }, logger, 'target T1') // nobody listens
  t.same(heard, [{ n: 1 }])
  await new Promise(r => setImmediate(r))
  t.equal(lines.length, 1)
  t.same(
    [lines[0]!.msg, lines[0]!.event, lines[0]!.session, (lines[0]!.err as { message: string }).message],
    ['collector handler threw', 'Runtime.consoleAPICalled', 'target T1', 'boom'],
  )
  t.equal(reg.size, 2)
  off()
  off()
  t.equal(reg.size, 1, 'unsubscribe is idempotent')
  reg.clear()
  t.equal(reg.size, 0)
})

t.test(
  'ListenedEvents counts handlers over every registry of a connection: add, unsubscribe (idempotent), clear',
  async t => {
    const listened = new ListenedEvents()
    const page = new HandlerRegistry(listened)
    const worker = new HandlerRegistry(listened)
    const h1 = () => undefined
    const h2 = () => undefined
    t.equal(listened.has('Runtime.consoleAPICalled'), false)
    const off1 = page.add('Runtime.consoleAPICalled', h1)
    page.add('Runtime.consoleAPICalled', h1) // the same handler twice is one handler
    const off2 = worker.add('Runtime.consoleAPICalled', h2)
    worker.add('Network.loadingFinished', h2)
    off1()
    off1()
    t.equal(listened.has('Runtime.consoleAPICalled'), true, 'the worker still listens')
    off2()
    t.equal(listened.has('Runtime.consoleAPICalled'), false, 'nobody listens: the connection may drop it unparsed')
    page.add('Runtime.exceptionThrown', h1)
    page.add('Runtime.exceptionThrown', h2)
    page.clear()
    t.equal(listened.has('Runtime.exceptionThrown'), false, 'a closed session takes its handlers off the count')
    t.equal(listened.has('Network.loadingFinished'), true)
    worker.clear()
    worker.clear()
    t.equal(listened.has('Network.loadingFinished'), false)
  },
)
