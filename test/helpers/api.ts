// An API app on 127.0.0.1 over a fresh store, with the real client (@onkernel/sdk) pointed at it.
import Kernel from '@onkernel/sdk'
import type { Test } from 'tap'
import { createApiApp, type ApiApp, type ApiDeps } from '../../src/api/app.js'
import { ALL_SCOPES, TokenSet } from '../../src/identity/tokens.js'
import type { Scope } from '../../src/api/operation.js'
import { startApiServer, type ApiServer } from '../../src/api/server.js'
import type { EventLogOptions } from '../../src/store/event-log.js'
import type { PipelineOptions } from '../../src/pipeline/pipeline.js'
import { openStore } from './store.js'

export const TOKEN = 'test-token-all'
export const BROWSER_ID = 'br-test-1'

export interface TestApi {
  url: string
  /** The log's directory (a test may delete it after closing the log). */
  dir: string
  app: ApiApp
  server: ApiServer
  log: Awaited<ReturnType<typeof openStore>>['log']
  pipeline: Awaited<ReturnType<typeof openStore>>['pipeline']
  client: Kernel
  /** fetch against the API with the all-scopes token unless headers say otherwise. */
  get(path: string, init?: RequestInit): Promise<Response>
}

export interface TestApiOptions {
  /** Extra tokens: token -> scopes. */
  tokens?: Record<string, Scope[]>
  deps?: Partial<ApiDeps>
  logOpts?: Partial<EventLogOptions>
  pipeOpts?: Partial<PipelineOptions>
}

export async function startApi(t: Test, opts: TestApiOptions = {}): Promise<TestApi> {
  const { dir, log, pipeline } = await openStore(t, opts.logOpts, opts.pipeOpts)
  const tokens = new TokenSet()
  tokens.add(TOKEN, ALL_SCOPES)
  for (const [tok, scopes] of Object.entries(opts.tokens ?? {})) tokens.add(tok, scopes)
  const app = createApiApp({ browserId: BROWSER_ID, log, pipeline, tokens, ...opts.deps })
  const server = await startApiServer(app, { host: '127.0.0.1', port: 0 })
  // Registered after openStore's teardown, so it runs first: streams end before the log closes.
  t.teardown(() => server.close(500))
  const client = new Kernel({ apiKey: TOKEN, baseURL: server.url, maxRetries: 0, timeout: 30_000 })
  const get = (path: string, init: RequestInit = {}) => {
    const headers = new Headers(init.headers)
    if (!headers.has('authorization')) headers.set('authorization', `Bearer ${TOKEN}`)
    return fetch(server.url + path, { ...init, headers })
  }
  return { url: server.url, dir, app, server, log, pipeline, client, get }
}
