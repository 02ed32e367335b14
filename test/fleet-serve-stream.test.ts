// `fleet serve` SSE (replay, Last-Event-ID resume, live events, the client cap) and the real
// client (@onkernel/sdk) paging a browser whose daemon is stopped and whose data dir is deleted.
import t from 'tap'
import { rm } from 'node:fs/promises'
import Kernel from '@onkernel/sdk'
import { createParser } from 'eventsource-parser'
import { BROWSER_ID, TOKEN, fleetFixture } from './helpers/fleet-serve.js'

const N = 600

interface Frame {
  id: string | undefined
  data: string
}

/**
 * Opens a stream and collects `data:` frames until `enough(frames)`; resolves with them and
 * the comments seen. Fails after timeoutMs.
 */
async function collect(
  url: string,
  headers: Record<string, string>,
  enough: (frames: Frame[]) => boolean,
  onOpen?: () => void,
  timeoutMs = 30_000,
): Promise<{ status: number; frames: Frame[]; comments: string[]; body?: string }> {
  const abort = new AbortController()
  const timer = setTimeout(() => abort.abort(), timeoutMs)
  try {
    const res = await fetch(url, { headers: { authorization: `Bearer ${TOKEN}`, ...headers }, signal: abort.signal })
    if (res.status !== 200) return { status: res.status, frames: [], comments: [], body: await res.text() }
    const frames: Frame[] = []
    const comments: string[] = []
    const parser = createParser({
      onEvent: e => frames.push({ id: e.id, data: e.data }),
      onComment: c => comments.push(c),
    })
    onOpen?.()
    const reader = res.body!.getReader()
    const decoder = new TextDecoder()
    while (!enough(frames)) {
      const { done, value } = await reader.read()
      if (done) break
      parser.feed(decoder.decode(value, { stream: true }))
    }
    abort.abort()
    return { status: 200, frames, comments }
  } finally {
    clearTimeout(timer)
  }
}

const seqsOf = (frames: Frame[]) => frames.map(f => Number(f.id))
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)

t.test('fleet serve SSE: replay, resume, live, cap; the SDK after the VM is gone', async t => {
  t.setTimeout(150_000)
  const fx = await fleetFixture(t, N)
  const path = `/browsers/${BROWSER_ID}/telemetry/stream`

  await t.test('replay=all: every event from the oldest, frames as the VM sends them', async t => {
    const fleet = await collect(fx.fleet.url + path + '?replay=all', {}, f => f.length >= N)
    const vm = await collect(fx.api.url + path + '?replay=all', {}, f => f.length >= N)
    t.equal(fleet.status, 200)
    t.same(seqsOf(fleet.frames), range(1, N), 'seqs 1..N, no hole, no duplicate')
    t.same(fleet.frames, vm.frames, 'id and data of every frame identical to the VM stream')
    t.ok(
      fleet.frames.every(f => (JSON.parse(f.data) as { seq: number }).seq === Number(f.id)),
      'data is the envelope of id',
    )
  })

  await t.test('Last-Event-ID resumes right after that seq and wins over replay=all', async t => {
    const r = await collect(fx.fleet.url + path + '?replay=all', { 'Last-Event-ID': '250' }, f => f.length >= N - 250)
    t.same(seqsOf(r.frames), range(251, N), 'from 251, no duplicate, no hole')
    const bad = await collect(fx.fleet.url + path, { 'Last-Event-ID': 'x1' }, () => true)
    t.equal(bad.status, 400)
    t.same(JSON.parse(bad.body!), {
      code: 'bad_request',
      message: 'invalid Last-Event-ID: expected the seq of the last event received, got "x1"',
      details: [
        { code: 'invalid_input', message: 'Last-Event-ID: expected the seq of the last event received, got "x1"' },
      ],
    })
  })

  await t.test('default: only events stored after connect, live as they are shipped', async t => {
    let emitted: Promise<void> | undefined
    const r = await collect(
      fx.fleet.url + path,
      {},
      f => f.length >= 120,
      () => {
        emitted = fx.emit(120)
      },
    )
    await emitted
    t.same(seqsOf(r.frames), range(N + 1, N + 120), 'exactly the new events, in order')
    // A resume from before the live part joins backlog and live without a hole.
    const resumed = await collect(fx.fleet.url + path, { 'Last-Event-ID': String(N - 5) }, f => f.length >= 125)
    t.same(seqsOf(resumed.frames), range(N - 4, N + 120))
  })

  await t.test('the client cap: 429 too_many_streams beyond --max-stream-clients (4)', async t => {
    const aborts: AbortController[] = []
    for (let i = 0; i < 4; i++) {
      const a = new AbortController()
      aborts.push(a)
      const res = await fetch(fx.fleet.url + path, { headers: { authorization: `Bearer ${TOKEN}` }, signal: a.signal })
      t.equal(res.status, 200, `stream ${i + 1} open`)
    }
    const refused = await fetch(fx.fleet.url + path, { headers: { authorization: `Bearer ${TOKEN}` } })
    t.equal(refused.status, 429)
    t.equal(refused.headers.get('retry-after'), '5')
    t.same(await refused.json(), {
      code: 'too_many_streams',
      message: 'at most 4 telemetry streams may be open at once; retry later',
    })
    for (const a of aborts) a.abort()
  })

  await t.test('pages cut by bytes (8 MiB) are the same as the VM cuts them', async t => {
    // 60 console events of ~400 KB: a page of 100 holds ~20 of them.
    const from = fx.api.log.lastSeq + 1
    await fx.emitEvents(
      Array.from({ length: 60 }, (_, i) => ({
        type: 'console_log',
        data: { level: 'log', text: String.fromCharCode(97 + (i % 26)).repeat(400_000), args: [] },
      })) as never,
    )
    const events = `/browsers/${BROWSER_ID}/telemetry/events`
    for (const base of [
      `?limit=100&offset=${from}`,
      `?limit=100&order=desc`,
      `?limit=100&category=console&offset=${from}`,
    ]) {
      let query = base
      let pages = 0
      for (;;) {
        const ask = async (url: string) => {
          const res = await fetch(url + events + query, { headers: { authorization: `Bearer ${TOKEN}` } })
          return {
            status: res.status,
            body: await res.text(),
            more: res.headers.get('x-has-more'),
            next: res.headers.get('x-next-offset'),
          }
        }
        const a = await ask(fx.api.url)
        const b = await ask(fx.fleet.url)
        t.same(b, a, `${base}: page ${pages} identical`)
        pages++
        if (a.more !== 'true' || pages > 10) break
        query = `${base.replace(/&offset=\d+/, '')}&offset=${a.next}`
      }
      t.ok(pages >= 3, `${base}: cut into ${pages} pages by bytes`)
    }
  })

  await t.test('the SDK pages a VM whose daemon is stopped and data dir deleted, as it paged the VM', async t => {
    const total = fx.api.log.lastSeq
    const list = async (client: Kernel, query: Record<string, unknown>) => {
      const out: unknown[] = []
      for await (const e of client.browsers.telemetry.events(BROWSER_ID, query as never)) out.push(e)
      return out
    }
    const queries = [
      { since: '1h', limit: 100 },
      { order: 'desc', limit: 7 },
      { since: '1h', category: ['console', 'page'], limit: 3 },
    ]
    const before = []
    for (const q of queries) before.push(await list(fx.api.client, q))
    t.equal(before[0]!.length, total, 'the VM served every event')

    await fx.shipper.stop()
    await fx.api.server.close(500)
    await fx.api.log.close()
    await rm(fx.api.dir, { recursive: true, force: true })
    t.equal((await fetch(fx.api.url + '/healthz').catch(() => undefined))?.status, undefined, 'the VM is gone')

    const fleetClient = new Kernel({ apiKey: TOKEN, baseURL: fx.fleet.url, maxRetries: 0, timeout: 30_000 })
    for (let i = 0; i < queries.length; i++)
      t.same(
        await list(fleetClient, queries[i]!),
        before[i],
        `same list through fleet serve: ${JSON.stringify(queries[i])}`,
      )
    const refused = await list(new Kernel({ apiKey: 'nope', baseURL: fx.fleet.url, maxRetries: 0 }), {}).catch(
      (err: { status?: number }) => err.status,
    )
    t.equal(refused, 401, 'a wrong key is refused (401)')
  })
})
