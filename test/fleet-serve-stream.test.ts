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
 * How long one step may take: a stream's whole replay, one page, one SDK listing, one emit or stop.
 * Each takes well under a second here with nothing else running (the whole file ~10 s), so 30 s
 * is a wide margin and a stuck step fails by name long before the file's 150 s.
 */
const STEP_MS = 30_000

/**
 * `p`, or a failure after ms naming the step (`what`) and what it had seen by then (`seen()`).
 * The timer never outlives the step.
 */
async function step<T>(what: string, p: Promise<T>, seen: () => string = () => '', ms = STEP_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const s = seen()
      reject(new Error(`${what}: not done after ${ms} ms${s ? `; seen: ${s}` : ''}`))
    }, ms)
  })
  try {
    return await Promise.race([p, deadline])
  } finally {
    clearTimeout(timer)
  }
}

/** fetch with the step's deadline on the answer's headers (the request is aborted when it passes). */
async function fetchStep(what: string, url: string, init: RequestInit = {}, ms = STEP_MS): Promise<Response> {
  const timeout = AbortSignal.timeout(ms)
  try {
    return await fetch(url, { ...init, signal: init.signal ? AbortSignal.any([init.signal, timeout]) : timeout })
  } catch (err) {
    if (timeout.aborted) throw new Error(`${what}: no answer (status and headers) after ${ms} ms`)
    throw err
  }
}

const describe = (frames: Frame[], comments: string[]) =>
  `${frames.length} frames (ids ${frames[0]?.id ?? '-'}..${frames.at(-1)?.id ?? '-'}), ${comments.length} comments`

/**
 * Opens a stream and collects `data:` frames until `enough(frames)`; resolves with them and
 * the comments seen. Fails after timeoutMs naming the step and what it had seen.
 */
async function collect(
  what: string,
  url: string,
  headers: Record<string, string>,
  enough: (frames: Frame[]) => boolean,
  onOpen?: () => void,
  timeoutMs = STEP_MS,
): Promise<{ status: number; frames: Frame[]; comments: string[]; body?: string }> {
  const abort = new AbortController()
  const frames: Frame[] = []
  const comments: string[] = []
  let phase = 'waiting for the answer (status and headers)'
  const timer = setTimeout(() => abort.abort(), timeoutMs)
  try {
    const res = await fetch(url, { headers: { authorization: `Bearer ${TOKEN}`, ...headers }, signal: abort.signal })
    phase = 'reading the stream'
    if (res.status !== 200) return { status: res.status, frames: [], comments: [], body: await res.text() }
    const parser = createParser({
      onEvent: e => frames.push({ id: e.id, data: e.data }),
      onComment: c => comments.push(c),
    })
    onOpen?.()
    const reader = res.body!.getReader()
    const decoder = new TextDecoder()
    while (!enough(frames)) {
      const { done, value } = await reader.read()
      if (done) throw new Error(`${what}: the stream ended early; seen: ${describe(frames, comments)}`)
      parser.feed(decoder.decode(value, { stream: true }))
    }
    abort.abort()
    return { status: 200, frames, comments }
  } catch (err) {
    if (abort.signal.aborted && !(err instanceof Error && err.message.startsWith(what)))
      throw new Error(`${what}: not done after ${timeoutMs} ms, ${phase}; seen: ${describe(frames, comments)}`)
    throw err
  } finally {
    clearTimeout(timer)
  }
}

const seqsOf = (frames: Frame[]) => frames.map(f => Number(f.id))
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)

t.test('fleet serve SSE: replay, resume, live, cap; the SDK after the VM is gone', async t => {
  t.setTimeout(150_000)
  const fx = await step(`fixture: ${N} events shipped and fleet serve connected`, fleetFixture(t, N))
  const path = `/browsers/${BROWSER_ID}/telemetry/stream`

  await t.test('replay=all: every event from the oldest, frames as the VM sends them', async t => {
    const fleet = await collect('fleet replay=all', fx.fleet.url + path + '?replay=all', {}, f => f.length >= N)
    const vm = await collect('VM replay=all', fx.api.url + path + '?replay=all', {}, f => f.length >= N)
    t.equal(fleet.status, 200)
    t.same(seqsOf(fleet.frames), range(1, N), 'seqs 1..N, no hole, no duplicate')
    t.same(fleet.frames, vm.frames, 'id and data of every frame identical to the VM stream')
    t.ok(
      fleet.frames.every(f => (JSON.parse(f.data) as { seq: number }).seq === Number(f.id)),
      'data is the envelope of id',
    )
  })

  await t.test('Last-Event-ID resumes right after that seq and wins over replay=all', async t => {
    const r = await collect(
      'resume from Last-Event-ID 250',
      fx.fleet.url + path + '?replay=all',
      { 'Last-Event-ID': '250' },
      f => f.length >= N - 250,
    )
    t.same(seqsOf(r.frames), range(251, N), 'from 251, no duplicate, no hole')
    const bad = await collect('Last-Event-ID x1 (400)', fx.fleet.url + path, { 'Last-Event-ID': 'x1' }, () => true)
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
      'live: 120 events emitted after connect',
      fx.fleet.url + path,
      {},
      f => f.length >= 120,
      () => {
        emitted = fx.emit(120)
      },
    )
    await step('emit(120) shipped', emitted!)
    t.same(seqsOf(r.frames), range(N + 1, N + 120), 'exactly the new events, in order')
    // A resume from before the live part joins backlog and live without a hole.
    const resumed = await collect(
      `resume from Last-Event-ID ${N - 5} across backlog and live`,
      fx.fleet.url + path,
      { 'Last-Event-ID': String(N - 5) },
      f => f.length >= 125,
    )
    t.same(seqsOf(resumed.frames), range(N - 4, N + 120))
  })

  await t.test('the client cap: 429 too_many_streams beyond --max-stream-clients (4)', async t => {
    const aborts: AbortController[] = []
    for (let i = 0; i < 4; i++) {
      const a = new AbortController()
      aborts.push(a)
      const res = await fetchStep(`cap: stream ${i + 1} of 4`, fx.fleet.url + path, {
        headers: { authorization: `Bearer ${TOKEN}` },
        signal: a.signal,
      })
      t.equal(res.status, 200, `stream ${i + 1} open`)
    }
    const refused = await fetchStep('cap: the 5th stream', fx.fleet.url + path, {
      headers: { authorization: `Bearer ${TOKEN}` },
    })
    t.equal(refused.status, 429)
    t.equal(refused.headers.get('retry-after'), '5')
    t.same(await step("cap: the 5th stream's body", refused.json()), {
      code: 'too_many_streams',
      message: 'at most 4 telemetry streams may be open at once; retry later',
    })
    for (const a of aborts) a.abort()
  })

  await t.test('pages cut by bytes (8 MiB) are the same as the VM cuts them', async t => {
    // 60 console events of ~400 KB: a page of 100 holds ~20 of them.
    const from = fx.api.log.lastSeq + 1
    await step(
      'emitEvents(60 console events of 400 KB) shipped',
      fx.emitEvents(
        Array.from({ length: 60 }, (_, i) => ({
          type: 'console_log',
          data: { level: 'log', text: String.fromCharCode(97 + (i % 26)).repeat(400_000), args: [] },
        })) as never,
      ),
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
        const ask = async (who: string, url: string) => {
          const what = `${who} page ${pages} of ${base}`
          const res = await fetchStep(what, url + events + query, { headers: { authorization: `Bearer ${TOKEN}` } })
          return {
            status: res.status,
            body: await step(`${what}: its body`, res.text()),
            more: res.headers.get('x-has-more'),
            next: res.headers.get('x-next-offset'),
          }
        }
        const a = await ask('VM', fx.api.url)
        const b = await ask('fleet', fx.fleet.url)
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
    const list = async (who: string, client: Kernel, query: Record<string, unknown>) => {
      const out: unknown[] = []
      const all = (async () => {
        for await (const e of client.browsers.telemetry.events(BROWSER_ID, query as never)) out.push(e)
      })()
      await step(`SDK listing of ${who}: ${JSON.stringify(query)}`, all, () => `${out.length} events`)
      return out
    }
    const queries = [
      { since: '1h', limit: 100 },
      { order: 'desc', limit: 7 },
      { since: '1h', category: ['console', 'page'], limit: 3 },
    ]
    const before = []
    for (const q of queries) before.push(await list('the VM', fx.api.client, q))
    t.equal(before[0]!.length, total, 'the VM served every event')

    await step("stop the VM's shipper", fx.shipper.stop())
    await step("close the VM's API server", fx.api.server.close(500))
    await step("close the VM's log", fx.api.log.close())
    await step("delete the VM's data dir", rm(fx.api.dir, { recursive: true, force: true }))
    // Refused at once (nothing listens); only a missed deadline is rethrown.
    const gone = await fetchStep("the VM's /healthz after it stopped", fx.api.url + '/healthz').catch((err: Error) => {
      if (err.message.startsWith("the VM's /healthz")) throw err
      return undefined
    })
    t.equal(gone?.status, undefined, 'the VM is gone')

    const fleetClient = new Kernel({ apiKey: TOKEN, baseURL: fx.fleet.url, maxRetries: 0, timeout: 30_000 })
    for (let i = 0; i < queries.length; i++)
      t.same(
        await list('fleet serve', fleetClient, queries[i]!),
        before[i],
        `same list through fleet serve: ${JSON.stringify(queries[i])}`,
      )
    const refused = await list(
      'fleet serve with a wrong key',
      new Kernel({ apiKey: 'nope', baseURL: fx.fleet.url, maxRetries: 0 }),
      {},
    ).catch((err: { status?: number }) => {
      if (err.status === undefined) throw err
      return err.status
    })
    t.equal(refused, 401, 'a wrong key is refused (401)')
  })
})
