// The events the connection drops unparsed (UNREAD_EVENTS) can never be subscribed to: a collector
// listening to one would silently hear nothing, so on() refuses it. What they save is measured by
// bench/overhead.ts; that they are really not delivered is pinned in monitor-cdp-client.test.ts.
import t from 'tap'
import { CdpSessionCore, UNREAD_EVENTS } from '../src/monitor/cdp-session.js'
import { ProtocolErrorLog } from '../src/monitor/protocol-error.js'
import { silentLogger } from '../src/log.js'

t.test('on() throws for an unread event and accepts any other', async t => {
  const session = new CdpSessionCore(
    () => Promise.resolve({} as never),
    undefined,
    new ProtocolErrorLog({ logger: silentLogger }),
    silentLogger,
    'test',
  )
  t.same([...UNREAD_EVENTS].sort(), [
    'Network.dataReceived',
    'Network.requestWillBeSentExtraInfo',
    'Network.responseReceivedExtraInfo',
  ])
  for (const e of UNREAD_EVENTS)
    t.throws(() => session.on(e as 'Network.dataReceived', () => undefined), {
      message: `${e} is in UNREAD_EVENTS: the connection drops it unparsed`,
    })
  const got: unknown[] = []
  session.on('Network.loadingFinished', p => got.push(p))
  session.dispatch('Network.loadingFinished', { requestId: '1' })
  t.same(got, [{ requestId: '1' }])
  t.equal(session.counts().listeners, 1)
})
