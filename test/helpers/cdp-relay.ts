// A WebSocket relay between a CDP client under test (the daemon, a Monitor) and Chromium: counts every
// message by method on the wire, and can hold back the browser's answers to chosen commands (a slow
// renderer, reproduced exactly instead of hoped for under load).
import type { Test } from 'tap'
import { createServer as createHttpServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import WebSocket, { WebSocketServer } from 'ws'
import { parseServeConfig } from '../../src/config/config.js'
import { silentLogger } from '../../src/log.js'
import { startDaemon } from '../../src/main.js'
import { tempDir } from './store.js'

export interface RelayOptions {
  /** Milliseconds to hold the browser's answer to a command of this method (0 or absent: none). */
  delayAnswer?: (method: string) => number
}

export async function countingRelay(t: Test, upstreamUrl: string, opts: RelayOptions = {}) {
  const events = new Map<string, number>() // "method sessionId" -> count (browser -> client)
  const commands: { method: string; sessionId?: string; params?: unknown }[] = [] // client -> browser
  const answers = new Map<string, number>() // "method sessionId" -> answers relayed to the client
  const http = createHttpServer()
  const wss = new WebSocketServer({ server: http })
  const timers = new Set<ReturnType<typeof setTimeout>>()
  /** Conditions waited on with until(), checked after every message the relay passes on. */
  const waiters = new Set<() => void>()
  const changed = () => {
    for (const w of [...waiters]) w()
  }
  /** The upstream socket of the newest client, for inject(). */
  let newest: WebSocket | undefined
  /** Commands the test injected: their answers go back to the test, never to the client. */
  const injected = new Map<number, { resolve(m: unknown): void; reject(e: Error): void }>()
  let nextInjected = 2_000_000_000
  wss.on('connection', client => {
    const up = new WebSocket(upstreamUrl, { perMessageDeflate: false, maxPayload: 256 * 1024 * 1024 })
    newest = up
    const queued: string[] = []
    const delayed = new Map<number, number>() // command id -> ms to hold its answer
    const pending = new Map<number, string>() // command id -> "method sessionId"
    up.on('open', () => {
      for (const m of queued.splice(0)) up.send(m)
    })
    client.on('message', d => {
      const text = String(d)
      const m = JSON.parse(text) as { id: number; method: string; sessionId?: string; params?: unknown }
      commands.push({ method: m.method, sessionId: m.sessionId, params: m.params })
      pending.set(m.id, `${m.method} ${m.sessionId ?? ''}`)
      const ms = opts.delayAnswer?.(m.method) ?? 0
      if (ms > 0) delayed.set(m.id, ms)
      if (up.readyState === WebSocket.OPEN) up.send(text)
      else queued.push(text)
      changed()
    })
    up.on('message', d => {
      const text = String(d)
      const m = JSON.parse(text) as { id?: number; method?: string; sessionId?: string }
      const mine = m.id !== undefined ? injected.get(m.id) : undefined
      if (mine) {
        injected.delete(m.id!)
        mine.resolve(m)
        return
      }
      if (m.method) {
        const k = `${m.method} ${m.sessionId ?? ''}`
        events.set(k, (events.get(k) ?? 0) + 1)
      }
      const ms = m.id !== undefined ? delayed.get(m.id) : undefined
      const answered = m.id !== undefined ? pending.get(m.id) : undefined
      if (answered !== undefined) pending.delete(m.id!)
      const relay = () => {
        if (answered !== undefined) answers.set(answered, (answers.get(answered) ?? 0) + 1)
        client.send(text)
        changed()
      }
      if (ms === undefined) {
        relay()
        return
      }
      delayed.delete(m.id!)
      const timer = setTimeout(() => {
        timers.delete(timer)
        if (client.readyState === WebSocket.OPEN) relay()
      }, ms)
      timers.add(timer)
    })
    client.on('close', () => up.close())
    up.on('close', () => {
      client.close()
      for (const [id, w] of injected) {
        injected.delete(id)
        w.reject(new Error('relay: the browser connection closed before its answer'))
      }
    })
  })
  await new Promise<void>(r => http.listen(0, '127.0.0.1', r))
  t.teardown(
    () =>
      new Promise<void>(r => {
        for (const timer of timers) clearTimeout(timer)
        for (const c of wss.clients) c.terminate()
        wss.close()
        http.close(() => r())
      }),
  )
  const { port } = http.address() as AddressInfo
  return {
    url: `ws://127.0.0.1:${port}${new URL(upstreamUrl).pathname}`,
    count: (method: string, sessionId: string) => events.get(`${method} ${sessionId}`) ?? 0,
    sent: (method: string, sessionId?: string) =>
      commands.filter(c => c.method === method && (sessionId === undefined || c.sessionId === sessionId)),
    commandCount: () => commands.length,
    /** Answers the browser gave the client to commands of this method on this session. */
    answered: (method: string, sessionId: string) => answers.get(`${method} ${sessionId}`) ?? 0,
    /**
     * Resolves once cond() holds, checked now and after every message the relay passes on (the
     * counts above change only then); rejects naming `what` after ms.
     */
    until(cond: () => boolean, ms: number, what: string): Promise<void> {
      if (cond()) return Promise.resolve()
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!cond()) return
          done()
          resolve()
        }
        const timer = setTimeout(() => {
          done()
          reject(new Error(`relay: ${what}: not so within ${ms} ms`))
        }, ms)
        const done = () => {
          clearTimeout(timer)
          waiters.delete(check)
        }
        waiters.add(check)
      })
    },
    /**
     * Sends a command of the test's own on the newest client's browser connection, in that client's
     * session: its answer comes on the same wire, after every message the browser sent there before
     * it (a barrier in the client's own stream). Neither counted nor passed on to the client.
     */
    inject(sessionId: string, method: string, params: object = {}): Promise<unknown> {
      const up = newest
      if (!up || up.readyState !== WebSocket.OPEN) return Promise.reject(new Error('relay: no open browser connection'))
      const id = nextInjected++
      return new Promise((resolve, reject) => {
        injected.set(id, { resolve, reject })
        up.send(JSON.stringify({ id, method, params, sessionId }))
      })
    },
  }
}

/**
 * A daemon (in this process) whose CDP connection runs through a counting relay, so a test can count
 * what it sends and receives; a temp data dir, no proxy, categories console..interaction + control.
 */
export async function daemonBehindRelay(t: Test, browserWsUrl: string, token: string, args: string[] = []) {
  const relay = await countingRelay(t, browserWsUrl)
  const dir = await tempDir(t, 'bt-relayed-')
  const config = parseServeConfig(
    [
      '--listen',
      '127.0.0.1:0',
      '--data-dir',
      dir,
      '--cdp-url',
      relay.url,
      '--token',
      token,
      '--proxy-listen',
      'off',
      '--categories',
      'console,network,page,interaction,control',
      ...args,
    ],
    {},
  )
  const d = await startDaemon(config, { logger: silentLogger, announce: () => {} })
  t.teardown(() => d.close())
  return { d, relay, dir }
}
