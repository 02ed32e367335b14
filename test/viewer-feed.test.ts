// The viewer's history window against a fake events API: the background fill and a load the list
// asks for (scrolled to its top) running at once both finish, with every event once, in seq order.
import t from 'tap'
import { EventFeed, INITIAL_EVENTS, PAGE_LIMIT } from '../src/viewer/event-feed.js'
import type { Envelope } from '../src/viewer/model.js'

const TOTAL = 1000

function envelope(seq: number): Envelope {
  return {
    seq,
    event: { type: 'console_log', category: 'console', ts: seq * 1000, data: { level: 'log', text: `line ${seq}` } },
  } as unknown as Envelope
}

/** GET events with order=desc and an optional offset (the only reads the history window makes). */
function fakeApi(slowFirstCall: () => boolean): typeof fetch {
  return (async (input: string | URL | Request) => {
    const url = new URL(String(input), 'http://viewer.test')
    const limit = Number(url.searchParams.get('limit'))
    const offset = url.searchParams.get('offset')
    const top = offset === null ? TOTAL : Number(offset) - 1
    const items: Envelope[] = []
    for (let s = top; s >= 1 && items.length < limit; s--) items.push(envelope(s))
    if (slowFirstCall()) await new Promise(r => setTimeout(r, 100))
    return new Response(JSON.stringify(items), {
      status: 200,
      headers: { 'x-has-more': String(items.length > 0 && items.at(-1)!.seq > 1) },
    })
  }) as typeof fetch
}

t.test('the background fill and a load from the list at the same time both finish', async t => {
  const realFetch = globalThis.fetch
  t.teardown(() => {
    globalThis.fetch = realFetch
  })
  let scrollLoad = false
  let slowPending = false
  globalThis.fetch = fakeApi(() => {
    const slow = slowPending
    slowPending = false
    return slow
  })
  const feed = new EventFeed('', 'b1', 'token')
  let scrolled: Promise<void> | undefined
  feed.subscribe(() => {
    // The moment the first page is shown and nothing is loading, the list asks for older events
    // (it is at its top), and that read is the slow one.
    if (!scrollLoad && !feed.loading && feed.events.length === PAGE_LIMIT) {
      scrollLoad = true
      slowPending = true
      scrolled = feed.loadOlder()
    }
  })
  await feed.loadLatest()
  await scrolled
  t.ok(scrollLoad, 'the list asked for older events while the fill was running')
  t.equal(TOTAL < INITIAL_EVENTS, true)
  t.same(
    feed.events.map(e => e.seq),
    Array.from({ length: TOTAL }, (_, i) => i + 1),
    'every event once, in seq order',
  )
  t.equal(feed.hasOlder, false)
})

t.test('"Load older" reads five minutes before the oldest event shown, page after page', async t => {
  const realFetch = globalThis.fetch
  t.teardown(() => {
    globalThis.fetch = realFetch
  })
  // One event a second for 50 minutes: the first fill shows the newest INITIAL_EVENTS.
  const total = 3000
  const at = (seq: number) => ({ ...envelope(seq), event: { ...envelope(seq).event, ts: seq * 1_000_000 } }) as Envelope
  const reads: string[] = []
  globalThis.fetch = (async (input: string | URL | Request) => {
    const url = new URL(String(input), 'http://viewer.test')
    reads.push(url.searchParams.get('offset') ?? 'latest')
    const offset = url.searchParams.get('offset')
    const top = offset === null ? total : Number(offset) - 1
    const items: Envelope[] = []
    for (let s = top; s >= 1 && items.length < Number(url.searchParams.get('limit')); s--) items.push(at(s))
    return new Response(JSON.stringify(items), {
      status: 200,
      headers: { 'x-has-more': String(items.length > 0 && items.at(-1)!.seq > 1) },
    })
  }) as typeof fetch
  const feed = new EventFeed('', 'b1', 'token')
  await feed.loadLatest()
  t.equal(feed.events[0]!.seq, total - INITIAL_EVENTS + 1, 'the first fill')
  reads.length = 0
  await feed.loadOlder()
  // 1001 is at 1001 s; five minutes before it is 701 s: three pages of 100.
  t.equal(feed.events[0]!.seq, 701, 'the five minutes before the oldest event shown')
  t.same(reads, ['1001', '901', '801'])
  t.same(
    feed.events.map(e => e.seq),
    Array.from({ length: total - 700 }, (_, i) => i + 701),
    'every event once, in seq order',
  )
  t.equal(feed.hasOlder, true)
})
