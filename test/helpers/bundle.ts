// Debug-bundle tests: an API over a fresh store with the bundle route, a session written into it on a
// clock the test sets, and the zip read back (yauzl) and checked by the standard tools.
import { execFile } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { Test } from 'tap'
import yauzl from 'yauzl'
import { createApiApp } from '../../src/api/app.js'
import { ALL_SCOPES, TokenSet } from '../../src/identity/tokens.js'
import { registerBundleRoutes, type BundleRouteStats } from '../../src/api/routes/bundle.js'
import { startApiServer } from '../../src/api/server.js'
import type { BundleLimits, BundleSource } from '../../src/bundle/bundle.js'
import { CONFIGURABLE_CATEGORIES } from '../../src/events/index.js'
import { Redactor } from '../../src/events/redact.js'
import type { EventLog } from '../../src/store/event-log.js'
import type { EventInput } from '../../src/pipeline/pipeline.js'
import { BROWSER_ID, TOKEN } from './api.js'
import { sessionStep, type MixOptions } from './session-mix.js'
import { accepted, openStore, tempDir } from './store.js'

export { BROWSER_ID, TOKEN }
export const T0_US = Date.UTC(2026, 0, 2, 3, 4, 5) * 1000

export interface BundleApi {
  url: string
  log: EventLog
  stats: BundleRouteStats
  /** Sets the ts of the next emitted events. */
  setClock(us: number): void
  emitStep(n: number, opts?: MixOptions): Promise<void>
  emit(input: EventInput): Promise<void>
  get(path: string, init?: RequestInit): Promise<Response>
}

export async function startBundleApi(
  t: Test,
  opts: { limits?: BundleLimits; source?: (log: EventLog) => Partial<BundleSource>; redactor?: Redactor } = {},
): Promise<BundleApi> {
  let clock = T0_US
  const redactor = opts.redactor ?? new Redactor()
  const { log, pipeline } = await openStore(
    t,
    {},
    { clock: () => clock, redactor, categories: CONFIGURABLE_CATEGORIES },
  )
  const tokens = new TokenSet()
  tokens.add(TOKEN, ALL_SCOPES)
  tokens.add('publish-only', ['publish'])
  let stats!: BundleRouteStats
  const app = createApiApp({
    browserId: BROWSER_ID,
    log,
    pipeline,
    tokens,
    version: '9.9.9-test',
    now: () => clock,
    routes: [
      r =>
        (stats = registerBundleRoutes(r, {
          source: {
            browserId: BROWSER_ID,
            daemonVersion: '9.9.9-test',
            log,
            categories: () => CONFIGURABLE_CATEGORIES.filter(c => pipeline.isEnabled(c)),
            redaction: redactor.policy(),
            ...opts.source?.(log),
          },
          ...(opts.limits ? { limits: opts.limits } : {}),
          now: () => clock,
        })),
    ],
  })
  const server = await startApiServer(app, { host: '127.0.0.1', port: 0 })
  t.teardown(() => server.close(500))
  return {
    url: server.url,
    log,
    get stats() {
      return stats
    },
    setClock(us) {
      clock = us
    },
    async emitStep(n, mix) {
      let last: Promise<boolean> = Promise.resolve(true)
      for (const input of sessionStep(n, mix)) last = accepted(pipeline.emit(input)).committed
      await last
    },
    async emit(input) {
      await accepted(pipeline.emit(input)).committed
    },
    get(path, init = {}) {
      const headers = new Headers(init.headers)
      if (!headers.has('authorization')) headers.set('authorization', `Bearer ${TOKEN}`)
      return fetch(server.url + path, { ...init, headers })
    },
  }
}

/** Every file of a zip, name -> bytes (yauzl, which checks sizes and CRCs as it reads). */
export async function unzipAll(zip: Buffer): Promise<Map<string, Buffer>> {
  const zf = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.fromBuffer(zip, { lazyEntries: true, validateEntrySizes: true }, (err, z) =>
      err ? reject(err) : resolve(z),
    ),
  )
  const out = new Map<string, Buffer>()
  await new Promise<void>((resolve, reject) => {
    zf.on('error', reject)
    zf.on('end', resolve)
    zf.on('entry', (entry: yauzl.Entry) => {
      zf.openReadStream(entry, (err, rs) => {
        if (err) return reject(err)
        const chunks: Buffer[] = []
        rs.on('data', (c: Buffer) => chunks.push(c))
        rs.on('error', reject)
        rs.on('end', () => {
          out.set(entry.fileName, Buffer.concat(chunks))
          zf.readEntry()
        })
      })
    })
    zf.readEntry()
  })
  return out
}

const run = promisify(execFile)

/** `unzip -t` and `python3 -m zipfile -t` on the bytes: both must accept them. */
export async function standardToolsAccept(t: Test, zip: Buffer): Promise<{ unzip: string; python: string }> {
  const dir = await tempDir(t, 'bt-bundle-zip-')
  const file = join(dir, 'bundle.zip')
  await writeFile(file, zip)
  const unzip = await run('unzip', ['-t', file])
  const python = await run('python3', ['-m', 'zipfile', '-t', file])
  return { unzip: unzip.stdout, python: python.stdout + python.stderr }
}

/** Every envelope of a window through the events API, as the raw JSON text of each item. */
export async function apiItems(api: Pick<BundleApi, 'get'>, query: string): Promise<string[]> {
  const out: string[] = []
  let q = `${query}&limit=100`
  for (;;) {
    const res = await api.get(`/browsers/${BROWSER_ID}/telemetry/events?${q}`)
    if (res.status !== 200) throw new Error(`events: ${res.status} ${await res.text()}`)
    // Stored JSON comes from JSON.stringify, so a parse and stringify round trip gives its exact text.
    out.push(...((await res.json()) as unknown[]).map(e => JSON.stringify(e)))
    if (res.headers.get('x-has-more') !== 'true') return out
    q = `offset=${res.headers.get('x-next-offset')}&limit=100${query.includes('until=') ? '&' + query.split('&').filter(p => p.startsWith('until='))[0] : ''}`
  }
}
