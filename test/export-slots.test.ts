// The bound on exports built at once, shared by trace.zip and the bundle: with the builds held open
// (their first log read waits on a gate), of N + 1 concurrent requests exactly N are built and the
// rest answered 429 with the error object and Retry-After, before any work; a slot is free again
// once its export ended, also when the client went away.
import t, { type Test } from 'tap'
import { createApiApp } from '../src/api/app.js'
import { ALL_SCOPES, TokenSet } from '../src/identity/tokens.js'
import { registerBundleRoutes } from '../src/api/routes/bundle.js'
import { registerTraceRoutes } from '../src/api/routes/trace.js'
import { startApiServer } from '../src/api/server.js'
import { TraceLinkSigner } from '../src/api/trace-links.js'
import { ExportSlots } from '../src/api/zip-response.js'
import { CONFIGURABLE_CATEGORIES } from '../src/events/index.js'
import { Redactor } from '../src/events/redact.js'
import type { EventLog } from '../src/store/event-log.js'
import { BROWSER_ID, T0_US, TOKEN, unzipAll } from './helpers/bundle.js'
import { waitFor } from './helpers/http.js'
import { sessionStep } from './helpers/session-mix.js'
import { accepted, openStore } from './helpers/store.js'

const N = 2

async function startExports(t: Test) {
  const clock = T0_US + 60_000_000
  const { log, pipeline } = await openStore(t, {}, { clock: () => T0_US, categories: CONFIGURABLE_CATEGORIES })
  let last: Promise<boolean> = Promise.resolve(true)
  for (let n = 0; n < 5; n++) for (const input of sessionStep(n)) last = accepted(pipeline.emit(input)).committed
  await last
  // Every log read waits while the gate is shut: the builds that started hold their slots.
  let open!: () => void
  let gate = new Promise<void>(r => (open = r))
  let reads = 0
  const entered: (() => void)[] = []
  const gated: EventLog = Object.create(log) as EventLog
  gated.read = async q => {
    reads++
    for (const e of entered.splice(0)) e()
    await gate
    return log.read(q)
  }
  const slots = new ExportSlots(N)
  const tokens = new TokenSet()
  tokens.add(TOKEN, ALL_SCOPES)
  const app = createApiApp({
    browserId: BROWSER_ID,
    log,
    pipeline,
    tokens,
    now: () => clock,
    routes: [
      r =>
        registerBundleRoutes(r, {
          source: {
            browserId: BROWSER_ID,
            daemonVersion: '9.9.9-test',
            log: gated,
            categories: () => CONFIGURABLE_CATEGORIES,
            redaction: new Redactor().policy(),
          },
          now: () => clock,
          slots,
        }),
      r =>
        registerTraceRoutes(r, {
          source: { browserId: BROWSER_ID, log: gated, platform: 'linux' },
          signer: TraceLinkSigner.random(),
          corsOrigins: [],
          now: () => clock,
          slots,
        }),
    ],
  })
  const server = await startApiServer(app, { host: '127.0.0.1', port: 0 })
  t.teardown(() => server.close(500))
  return {
    slots,
    get reads() {
      return reads
    },
    /** Resolves once `n` reads have reached the gate in all. */
    readsReach: (n: number) =>
      new Promise<void>(resolve => {
        const check = () => (reads >= n ? resolve() : entered.push(check))
        check()
      }),
    open: () => open(),
    shut: () => {
      gate = new Promise<void>(r => (open = r))
    },
    get: (path: string, init: RequestInit = {}) =>
      fetch(server.url + `/browsers/${BROWSER_ID}/telemetry/${path}`, {
        ...init,
        headers: { authorization: `Bearer ${TOKEN}` },
      }),
  }
}

t.test(`of ${N + 1} concurrent exports, trace.zip and bundle mixed, exactly ${N} are built`, async t => {
  const x = await startExports(t)
  const paths = ['bundle?since=10m', 'trace.zip?since=10m', 'bundle?since=10m']
  const answers = paths.map(p => x.get(p))
  // The one without a slot is answered at once, while the other two are held at the gate.
  let firstRefusal!: (res: Response) => void
  const refusal = new Promise<Response>(r => (firstRefusal = r))
  for (const a of answers) void a.then(res => res.status === 429 && firstRefusal(res))
  const refused = await refusal
  t.equal(refused.headers.get('retry-after'), '5')
  t.same(await refused.json(), {
    code: 'too_many_requests',
    message: `at most ${N} trace and bundle exports are built at once (--export-max-concurrent); retry when one ends`,
  })
  await x.readsReach(N)
  t.equal(x.slots.active, N)
  t.equal(x.reads, N, 'the refused export read nothing')
  // Every later request is refused too while both are held, whichever export it asks for.
  for (const p of ['trace.zip?since=10m', 'bundle?since=10m']) {
    const more = await x.get(p)
    t.equal(more.status, 429, `${p}: 429 while ${N} are built`)
    await more.arrayBuffer()
  }
  x.open()
  const statuses = await Promise.all(
    answers.map(async a => {
      const res = await a
      if (res.status === 429) return res.status // its body was read above
      const body = Buffer.from(await res.arrayBuffer())
      if (res.status === 200) t.ok((await unzipAll(body)).size > 0, 'a whole zip')
      return res.status
    }),
  )
  t.same(statuses.sort(), [200, 200, 429], `exactly ${N} succeeded`)
  await waitFor(() => x.slots.active === 0, 10_000, 'both slots free once their exports ended')
  const again = await x.get('trace.zip?since=10m')
  t.equal(again.status, 200, 'a slot is free again')
  await again.arrayBuffer()
})

t.test('a client that goes away frees its slot; a refused request before a slot is taken holds none', async t => {
  const x = await startExports(t)
  const abort = new AbortController()
  const held = x.get('bundle?since=10m', { signal: abort.signal })
  await x.readsReach(1)
  t.equal(x.slots.active, 1)
  const bad = await x.get('trace.zip?since=not-a-time')
  t.equal(bad.status, 400, 'bad input is refused before a slot is taken')
  await bad.arrayBuffer()
  t.equal(x.slots.active, 1)
  t.equal((await held).status, 200, 'the download began')
  abort.abort()
  // The build stops at its next read (the gate opens) instead of writing for nobody.
  x.open()
  await waitFor(() => x.slots.active === 0, 10_000, 'the slot of the vanished client is free')
  x.shut()
  const two = [x.get('bundle?since=10m'), x.get('trace.zip?since=10m')]
  await x.readsReach(3)
  t.equal(x.slots.active, N, 'both slots taken again')
  x.open()
  for (const r of await Promise.all(two)) {
    t.equal(r.status, 200)
    await r.arrayBuffer()
  }
})
