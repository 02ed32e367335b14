// GET /browsers/{id}/telemetry/stream: frames, start points, exact resume under concurrent emits,
// keepalive, slow-client disconnect + resume, clean end on shutdown.
import t from 'tap'
import type { ServerResponse } from 'node:http'
import { connect } from 'node:net'
import { createParser, type EventSourceMessage } from 'eventsource-parser'
import { BROWSER_ID, TOKEN, startApi, type TestApi } from './helpers/api.js'
import { waitFor } from './helpers/http.js'
import { RecordingResponse, dechunk } from './helpers/sse.js'
import { openStore } from './helpers/store.js'
import { TelemetryStreams } from '../src/sse/telemetry-streams.js'
import type { Envelope } from '../src/events/index.js'
import type { EventInput } from '../src/pipeline/pipeline.js'

const STREAM = `/browsers/${BROWSER_ID}/telemetry/stream`
const tick = (): EventInput => ({ type: 'cdp_connect', data: {} })

interface OpenStream {
  res: Response
  msgs: EventSourceMessage[]
  comments: string[]
  /** 'ended' when the server ended the response, 'aborted' when we closed it. */
  done: Promise<'ended' | 'aborted'>
  close(): void
}

async function openStream(api: TestApi, opts: { lastEventId?: string; query?: string } = {}): Promise<OpenStream> {
  const ac = new AbortController()
  const headers: Record<string, string> = { accept: 'text/event-stream' }
  if (opts.lastEventId !== undefined) headers['last-event-id'] = opts.lastEventId
  const res = await api.get(STREAM + (opts.query ?? ''), { signal: ac.signal, headers })
  const msgs: EventSourceMessage[] = []
  const comments: string[] = []
  const parser = createParser({ onEvent: e => msgs.push(e), onComment: c => comments.push(c) })
  const done = (async (): Promise<'ended' | 'aborted'> => {
    if (!res.body) return 'ended'
    const reader = res.body.getReader()
    const dec = new TextDecoder()
    try {
      for (;;) {
        const { value, done } = await reader.read()
        if (done) return 'ended'
        parser.feed(dec.decode(value, { stream: true }))
      }
    } catch {
      return 'aborted'
    }
  })()
  return { res, msgs, comments, done, close: () => ac.abort() }
}

const ids = (msgs: EventSourceMessage[]) => msgs.map(m => Number(m.id))
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)

async function emitN(api: TestApi, n: number): Promise<void> {
  for (let i = 0; i < n; i++) api.pipeline.emit(tick())
  await api.log.flush()
}

t.test('frames: id + data, no event field; default start is "new events only"', async t => {
  const api = await startApi(t)
  await emitN(api, 5)
  const s = await openStream(api)
  t.equal(s.res.status, 200)
  t.match(s.res.headers.get('content-type'), /^text\/event-stream/)
  t.equal(api.app.streams.size, 1)
  await emitN(api, 5)
  await waitFor(() => s.msgs.length >= 5, 10_000, '5 live events')
  t.same(ids(s.msgs), [6, 7, 8, 9, 10], 'only events committed after connecting')
  for (const m of s.msgs) {
    t.equal(m.event, undefined, 'no event: field')
    const env = JSON.parse(m.data) as Envelope
    t.equal(env.seq, Number(m.id), 'id is the seq')
    t.same(Object.keys(env), ['seq', 'event'])
    t.equal(env.event.type, 'cdp_connect')
  }
  s.close()
  await waitFor(() => api.app.streams.size === 0, 10_000, 'server noticed the disconnect')
})

t.test('replay=all starts at the oldest retained event; Last-Event-ID wins over replay', async t => {
  const api = await startApi(t)
  await emitN(api, 12)
  const all = await openStream(api, { query: '?replay=all' })
  await waitFor(() => all.msgs.length >= 12, 10_000, 'replay')
  t.same(ids(all.msgs), range(1, 12))
  const resumed = await openStream(api, { query: '?replay=all', lastEventId: '7' })
  await waitFor(() => resumed.msgs.length >= 5, 10_000, 'resume')
  await emitN(api, 2)
  await waitFor(() => resumed.msgs.length >= 7 && all.msgs.length >= 14, 10_000, 'live after backlog')
  t.same(ids(resumed.msgs), range(8, 14), 'Last-Event-ID 7 -> 8.., replay ignored')
  t.same(ids(all.msgs), range(1, 14))
  const ahead = await openStream(api, { lastEventId: '999' })
  await emitN(api, 1)
  await waitFor(() => ahead.msgs.length >= 1, 10_000, 'id beyond lastSeq')
  t.same(ids(ahead.msgs), [15], 'an id from another data dir (beyond lastSeq) gets new events')
  for (const s of [all, resumed, ahead]) s.close()
})

t.test('bad Last-Event-ID -> 400 naming it', async t => {
  const api = await startApi(t)
  for (const [headers, query, param] of [
    [{ 'last-event-id': 'abc' }, '', 'Last-Event-ID'],
    [{ 'last-event-id': '-3' }, '?replay=latest', 'Last-Event-ID'],
  ] as const) {
    const res = await api.get(STREAM + query, { headers })
    t.equal(res.status, 400)
    const body = JSON.parse(await res.text())
    t.equal(body.code, 'bad_request')
    t.equal(body.details[0].code, 'invalid_input')
    t.ok(body.details[0].message.startsWith(param + ':'), body.details[0].message)
  }
})

t.test('resume is exact under concurrent emits: no duplicate, no hole at the handover', async t => {
  t.setTimeout(60_000)
  // Small backlog pages and a small hold buffer force many pages and hold-buffer overflows.
  const api = await startApi(t, { deps: { streams: { pageSize: 37, bufferEvents: 200 } } })
  await emitN(api, 3000)
  let producing = true
  const producer = (async () => {
    while (producing) {
      for (let i = 0; i < 25; i++) api.pipeline.emit(tick())
      await new Promise(r => setImmediate(r))
    }
  })()
  const streams: [string, OpenStream][] = []
  for (const from of ['0', '1', '1500', '2990']) {
    streams.push([`Last-Event-ID ${from}`, await openStream(api, { lastEventId: from })])
  }
  streams.push(['replay=all', await openStream(api, { query: '?replay=all' })])
  const liveFrom = api.log.lastSeq
  streams.push(['new', await openStream(api)])
  // The producer keeps emitting until every stream, through its backlog and handover, is live on
  // events emitted after the last stream opened.
  const opened = api.log.lastSeq
  for (const [what, s] of streams)
    await waitFor(
      () => s.msgs.length > 0 && Number(s.msgs[s.msgs.length - 1]!.id) > opened + 100,
      60_000,
      `${what} live past the handover`,
    )
  producing = false
  await producer
  await api.log.flush()
  const last = api.log.lastSeq
  t.ok(last > 3100, `producer emitted during the handover (last seq ${last})`)
  for (const [what, s] of streams) {
    await waitFor(() => s.msgs.length > 0 && Number(s.msgs[s.msgs.length - 1]!.id) >= last, 60_000, `${what} caught up`)
    const got = ids(s.msgs)
    const from = what.startsWith('Last-Event-ID')
      ? Number(what.split(' ')[1]) + 1
      : what === 'replay=all'
        ? 1
        : undefined
    if (from !== undefined) {
      t.equal(got[0], from, `${what}: starts right after the resume point`)
      t.same(got, range(from, last), `${what}: every seq once, in order`)
    } else {
      t.ok(got[0]! > liveFrom, `${what}: only new events`)
      t.same(got, range(got[0]!, last), `${what}: contiguous`)
    }
    s.close()
  }
})

t.test('the real client reads the stream and resumes with Last-Event-ID', async t => {
  const api = await startApi(t)
  await emitN(api, 4)
  const stream = await api.client.browsers.telemetry.stream(BROWSER_ID, { 'Last-Event-ID': '2' } as never)
  await emitN(api, 2)
  const seen: number[] = []
  for await (const env of stream) {
    seen.push(env.seq)
    if (env.seq === 6) break
  }
  t.same(seen, [3, 4, 5, 6])
  await waitFor(() => api.app.streams.size === 0, 10_000, 'client break closes the stream')
})

t.test('replay values other than all mean from now, as the client documents them', async t => {
  const api = await startApi(t)
  await emitN(api, 4)
  for (const replay of ['latest', 'ALL', 'new', '']) {
    const before = api.log.lastSeq
    const stream = await api.client.browsers.telemetry.stream(BROWSER_ID, { replay })
    await waitFor(() => api.app.streams.size === 1, 10_000, `replay=${replay} stream open`)
    await emitN(api, 2)
    const seen: number[] = []
    for await (const env of stream) {
      seen.push(env.seq)
      if (seen.length === 2) break
    }
    t.same(seen, [before + 1, before + 2], `replay=${JSON.stringify(replay)}: only new events`)
    await waitFor(() => api.app.streams.size === 0, 10_000, 'client break closes the stream')
  }
})

const frameIds = (write: string) => [...write.matchAll(/^id: (\d+)$/gm)].map(m => Number(m[1]))

t.test('live writes are coalesced: commits within coalesceMs reach a client in one write, in order', async t => {
  for (const [coalesceMs, expected] of [
    [3_600_000, [[1], [2, 3, 4]]],
    [0, [[1], [2], [3], [4]]],
  ] as const) {
    const { log, pipeline } = await openStore(t)
    const streams = new TelemetryStreams(log, { keepaliveMs: 3_600_000, bufferEvents: 1000, coalesceMs })
    const res = new RecordingResponse()
    const done = streams.open(res as unknown as ServerResponse, { kind: 'new' })
    // Four commits: the first after a quiet spell goes out at once, the next three within the interval.
    for (let i = 0; i < 4; i++) {
      pipeline.emit(tick())
      await log.flush()
    }
    t.same(
      res.writes.map(frameIds),
      coalesceMs === 0 ? expected : [[1]],
      `coalesceMs ${coalesceMs}: writes before shutdown`,
    )
    await streams.closeAll() // flushes what is pending, then ends the stream
    await done
    t.same(
      res.writes.map(frameIds).filter(ids => ids.length > 0),
      expected,
      `coalesceMs ${coalesceMs}: every frame once, in order`,
    )
  }
})

t.test('keepalive comments while idle', async t => {
  const api = await startApi(t, { deps: { streams: { keepaliveMs: 100 } } })
  const s = await openStream(api)
  await waitFor(() => s.comments.length >= 2, 10_000, 'two keepalives')
  t.ok(
    s.comments.every(c => c.trim() === 'keepalive'),
    JSON.stringify(s.comments),
  )
  t.equal(s.msgs.length, 0)
  s.close()
})

t.test('a slow client is disconnected past its buffer, others and ingest are unaffected, and it resumes', async t => {
  t.setTimeout(60_000)
  // Small commit batches so the fast reader (same process) gets turns between them.
  const api = await startApi(t, { deps: { streams: { bufferEvents: 100 } }, logOpts: { commitMaxEvents: 16 } })
  const fast = await openStream(api)
  // A raw client that stops reading: the kernel buffers fill, then the per-client buffer.
  const sock = connect(Number(new URL(api.url).port), '127.0.0.1')
  await new Promise<void>(r => sock.once('connect', () => r()))
  sock.setNoDelay(true)
  const chunks: Buffer[] = []
  let closed = false
  sock.on('close', () => {
    closed = true
  })
  sock.write(`GET ${STREAM} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nAccept: text/event-stream\r\n\r\n`)
  await waitFor(() => api.app.streams.size === 2, 10_000, 'slow client registered')
  sock.pause()

  const big = 'x'.repeat(50_000)
  const total = 600 // ~30 MB: far more than socket buffers hold
  // Rounds of 20; the fast client reads each round before the next, the slow one falls behind.
  for (let sent = 0; sent < total;) {
    for (let i = 0; i < 20; i++, sent++)
      api.pipeline.emit({ type: 'console_log', data: { level: 'log', text: big, args: [String(sent)] } })
    await api.log.flush()
    await waitFor(() => fast.msgs.length >= sent, 30_000, `fast client read ${sent}`)
  }
  t.equal(api.log.lastSeq, total, 'ingest committed everything (never blocked by the slow client)')
  await waitFor(() => api.app.streams.stats.slowDisconnects > 0, 30_000, 'slow client disconnected')
  t.same(ids(fast.msgs), range(1, total), 'the fast client missed nothing')
  t.equal(api.app.streams.stats.slowDisconnects, 1, 'only the slow client was cut off')

  // Read what the slow client had received before it was cut off; resume from its last complete frame.
  sock.on('data', (c: Buffer) => chunks.push(c))
  sock.resume()
  await waitFor(() => closed, 30_000, 'slow socket closed')
  const text = Buffer.concat(chunks).toString('utf8')
  const body = text.slice(text.indexOf('\r\n\r\n') + 4)
  const got: number[] = []
  // Chunked transfer encoding: strip the chunk-size lines before parsing SSE.
  const parser = createParser({ onEvent: e => got.push(Number(e.id)) })
  parser.feed(dechunk(body))
  // Measured 96-100 of 600 over 11 fresh-clone suite runs (quiet to load 14): 6x under the total.
  t.ok(got.length < total, `slow client got ${got.length} of ${total} before the cut`)
  t.same(got, range(1, got.length), 'what it got is a contiguous prefix')
  const lastSeen = got.length > 0 ? got[got.length - 1]! : 0
  const again = await openStream(api, { lastEventId: String(lastSeen) })
  await waitFor(() => again.msgs.length >= total - lastSeen, 60_000, 'resumed to the end')
  t.same(ids(again.msgs), range(lastSeen + 1, total), 'resume with the last seq: nothing lost')
  fast.close()
  again.close()
})

t.test('streams end cleanly on shutdown', async t => {
  const api = await startApi(t)
  const a = await openStream(api)
  const b = await openStream(api, { query: '?replay=all' })
  await emitN(api, 3)
  await waitFor(() => a.msgs.length === 3 && b.msgs.length === 3, 10_000, 'events delivered')
  await api.server.close()
  t.equal(await a.done, 'ended', 'the response ended normally (not reset)')
  t.equal(await b.done, 'ended')
  t.equal(api.app.streams.size, 0)
})
