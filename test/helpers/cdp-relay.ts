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
  const http = createHttpServer()
  const wss = new WebSocketServer({ server: http })
  const timers = new Set<ReturnType<typeof setTimeout>>()
  wss.on('connection', client => {
    const up = new WebSocket(upstreamUrl, { perMessageDeflate: false, maxPayload: 256 * 1024 * 1024 })
    const queued: string[] = []
    const delayed = new Map<number, number>() // command id -> ms to hold its answer
    up.on('open', () => {
      for (const m of queued.splice(0)) up.send(m)
    })
    client.on('message', d => {
      const text = String(d)
      const m = JSON.parse(text) as { id: number; method: string; sessionId?: string; params?: unknown }
      commands.push({ method: m.method, sessionId: m.sessionId, params: m.params })
      const ms = opts.delayAnswer?.(m.method) ?? 0
      if (ms > 0) delayed.set(m.id, ms)
      if (up.readyState === WebSocket.OPEN) up.send(text)
      else queued.push(text)
    })
    up.on('message', d => {
      const text = String(d)
      const m = JSON.parse(text) as { id?: number; method?: string; sessionId?: string }
      if (m.method) {
        const k = `${m.method} ${m.sessionId ?? ''}`
        events.set(k, (events.get(k) ?? 0) + 1)
      }
      const ms = m.id !== undefined ? delayed.get(m.id) : undefined
      if (ms === undefined) {
        client.send(text)
        return
      }
      delayed.delete(m.id!)
      const timer = setTimeout(() => {
        timers.delete(timer)
        if (client.readyState === WebSocket.OPEN) client.send(text)
      }, ms)
      timers.add(timer)
    })
    client.on('close', () => up.close())
    up.on('close', () => client.close())
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
