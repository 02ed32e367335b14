// Every sink sends records as readers serve them: the sink core applies the read mapping (source-
// mapped console stacks) to each record it hands its transport, console records only, and leaves
// the log as it was. A real event log; a transport that records what it was given.
import t from 'tap'
import { Sink } from '../src/sink/sink.js'
import type { LinkEvents, ShipLink } from '../src/sink/link.js'
import type { StoredRecord } from '../src/store/event-log.js'
import type { ReadMapping } from '../src/store/read-mapping.js'
import { openStore } from './helpers/store.js'

t.test('the sink core sends console records through the read mapping, the rest as stored', async t => {
  const { log, pipeline } = await openStore(t, {}, { shedding: false })
  const stack = {
    callFrames: [{ functionName: 'f', scriptId: '1', url: 'http://127.0.0.1/a.js', lineNumber: 0, columnNumber: 5 }],
  }
  pipeline.emit({ type: 'console_error', data: { text: 'boom', stack_trace: stack } as never })
  pipeline.emit({ type: 'console_log', data: { level: 'log', text: 'hi', args: [] } as never })
  pipeline.emit({ type: 'page_load', data: { cdp_timestamp: 1 } as never })
  await log.flush()
  const asked: number[][] = []
  const mapping: ReadMapping = {
    generation: 0,
    mapRecords: records => Promise.resolve(records.slice()),
    mapRecordsNow: records => {
      asked.push(records.map(r => r.seq))
      return records.map(r => (r.json.includes('"boom"') ? { ...r, json: r.json.replace('"boom"', '"mapped"') } : r))
    },
  }
  const sent: StoredRecord[] = []
  const done = new Promise<void>(resolve => {
    const link = (events: LinkEvents): ShipLink => ({
      start: () => {
        events.up()
        events.ready()
      },
      stop: async () => undefined,
      resync: async () => 0,
      publish: rec => {
        sent.push(rec)
        queueMicrotask(() => events.ack(rec.seq))
        if (sent.length === 3) resolve()
      },
    })
    const sink = new Sink({ log, name: 'test', watermarkName: 'test', errorKinds: [], link, mapping })
    t.teardown(() => sink.stop(0))
    void sink.start()
  })
  await done
  t.same(
    sent.map(r => r.seq),
    [1, 2, 3],
  )
  t.match(sent[0]!.json, /"text":"mapped"/, 'the console error went out as the mapping serves it')
  t.same(asked, [[1], [2]], 'asked for the console records only, one at a time')
  const stored = await log.read({ order: 'asc', cursor: 1, limit: 10 })
  t.match(stored.records[0]!.json, /"text":"boom"/, 'the log keeps what was stored')
  t.equal(sent[2]!.json, stored.records[2]!.json, 'a page record as stored')
})
