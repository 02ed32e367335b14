// A realistic mix of a browsing session's events, emitted through the real pipeline (redaction,
// validation, seq): page navigations with their requests, bodies, console lines, clicks, a WebSocket
// with messages, agent commands and screenshots. Step n is one "second" of the session; the bundle
// tests, the CLI tests and bench/bundle.ts build their logs with it.
import { randomBytes } from 'node:crypto'
import type { EventInput } from '../../src/pipeline/pipeline.js'

/** A 1x1 PNG (what the screenshot collector stores, base64). */
export const TINY_PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='

const TARGET = 'F1E2D3C4B5A6978812345678ABCDEF01'
const SESSION = 'B1C2D3E4F5A6B7C8D9E0F1A2B3C4D5E6'
const FRAME = TARGET

export interface MixOptions {
  /** Response body size in characters (default 2,000). */
  bodyChars?: number
  /** A screenshot every this many steps (default 5; 0 = none). */
  screenshotEvery?: number
  /** The PNG stored by screenshot events (default TINY_PNG). */
  png?: string
  /** Bodies of random base64 text (they do not compress), instead of one repeated character. */
  randomBodies?: boolean
}

/** The events of step `n` of a session (a navigation every 20 steps, requests, console, input...). */
export function sessionStep(n: number, opts: MixOptions = {}): EventInput[] {
  const nav = Math.floor(n / 20) + 1
  const loader = `LOADER${nav}`
  const url = `https://shop.example.com/page/${nav}`
  const ctx = { target_id: TARGET, session_id: SESSION, frame_id: FRAME, target_type: 'page' as const, nav_seq: nav }
  const out: EventInput[] = []
  const pad = Math.max(0, (opts.bodyChars ?? 2000) - 24)
  const body = (i: number) =>
    `{"item":${i},"pad":"${
      opts.randomBodies
        ? randomBytes(Math.ceil(pad * 0.75))
            .toString('base64')
            .slice(0, pad)
        : 'x'.repeat(pad)
    }"}`
  if (n % 20 === 0) {
    out.push({
      type: 'network_request',
      source: { kind: 'cdp', event: 'Network.requestWillBeSent' },
      data: {
        ...ctx,
        url,
        loader_id: loader,
        request_id: loader,
        method: 'GET',
        headers: {},
        resource_type: 'Document',
      },
    })
    const { nav_seq: _navSeq, ...navCtx } = ctx
    out.push({ type: 'page_navigation', source: { kind: 'cdp' }, data: { ...navCtx, url, loader_id: loader } })
    out.push({
      type: 'network_response',
      source: { kind: 'cdp', event: 'Network.loadingFinished' },
      data: {
        ...ctx,
        url,
        loader_id: loader,
        request_id: loader,
        status: 200,
        status_text: 'OK',
        headers: { 'content-type': 'text/html' },
        mime_type: 'text/html',
        resource_type: 'Document',
        body: `<!doctype html><title>page ${nav}</title>`,
      },
    })
    out.push({
      type: 'page_dom_content_loaded',
      source: { kind: 'cdp' },
      data: { ...ctx, url, loader_id: loader, cdp_timestamp: n },
    })
    out.push({ type: 'page_load', source: { kind: 'cdp' }, data: { ...ctx, url, loader_id: loader, cdp_timestamp: n } })
  }
  const rid = `R${n}`
  const apiUrl = `https://shop.example.com/api/items/${n}?page=2`
  out.push({
    type: 'network_request',
    source: { kind: 'cdp', event: 'Network.requestWillBeSent' },
    data: {
      ...ctx,
      url: apiUrl,
      loader_id: loader,
      request_id: rid,
      method: n % 7 === 0 ? 'POST' : 'GET',
      headers: { accept: 'application/json' },
      resource_type: 'Fetch',
      ...(n % 7 === 0 ? { post_data: JSON.stringify({ sku: n, qty: 1 }) } : {}),
    },
  })
  if (n % 11 === 5) {
    out.push({
      type: 'network_loading_failed',
      source: { kind: 'cdp' },
      data: { ...ctx, url: apiUrl, request_id: rid, error_text: 'net::ERR_CONNECTION_REFUSED', canceled: false },
    })
  } else {
    out.push({
      type: 'network_response',
      source: { kind: 'cdp', event: 'Network.loadingFinished' },
      data: {
        ...ctx,
        url: apiUrl,
        request_id: rid,
        status: n % 13 === 0 ? 500 : 200,
        status_text: n % 13 === 0 ? 'Internal Server Error' : 'OK',
        headers: { 'content-type': 'application/json' },
        mime_type: 'application/json',
        resource_type: 'Fetch',
        body: body(n),
      },
    })
  }
  out.push({
    type: 'console_log',
    source: { kind: 'cdp', event: 'Runtime.consoleAPICalled' },
    data: { ...ctx, url, level: n % 3 === 0 ? 'warning' : 'log', text: `step ${n}\tloaded`, args: [`step ${n}`] },
  })
  if (n % 10 === 3) {
    out.push({
      type: 'console_error',
      source: { kind: 'cdp', event: 'Runtime.exceptionThrown' },
      data: {
        ...ctx,
        url,
        text: `Uncaught Error: boom ${n}\n    at app.js:1:2`,
        line: 1,
        column: 2,
        source_url: `${url}/app.js`,
      },
    })
  }
  if (n % 4 === 2) {
    out.push({
      type: 'interaction_click',
      source: { kind: 'cdp' },
      data: { ...ctx, url, x: 80, y: 60 + (n % 5), selector: '#buy', tag: 'BUTTON', text: 'Buy now' },
    })
  }
  if (n % 20 === 10) {
    const ws = `WS${n}`
    const wsUrl = 'wss://shop.example.com/live'
    out.push({
      type: 'network_websocket_created',
      source: { kind: 'cdp' },
      data: { ...ctx, url: wsUrl, request_id: ws },
    })
    out.push({
      type: 'network_websocket_handshake',
      source: { kind: 'cdp' },
      data: {
        ...ctx,
        url: wsUrl,
        request_id: ws,
        status: 101,
        status_text: 'Switching Protocols',
        request_headers: {},
        response_headers: {},
      },
    })
    for (const direction of ['sent', 'received'] as const)
      out.push({
        type: 'network_websocket_frame',
        source: { kind: 'cdp' },
        data: { ...ctx, url: wsUrl, request_id: ws, direction, opcode: 1, payload: `{"tick":${n}}`, payload_bytes: 12 },
      })
    out.push({
      type: 'network_websocket_closed',
      source: { kind: 'cdp' },
      data: { ...ctx, url: wsUrl, request_id: ws },
    })
  }
  if (n % 15 === 7) {
    out.push({
      type: 'cdp_command',
      source: { kind: 'local_process' },
      data: {
        connection_id: 'agent-1',
        id: n,
        method: 'Runtime.evaluate',
        duration_ms: 3,
        outcome: 'ok',
        request_bytes: 80,
        response_bytes: 40,
      },
    })
  }
  const every = opts.screenshotEvery ?? 5
  if (every > 0 && n % every === 0)
    out.push({ type: 'monitor_screenshot', source: { kind: 'local_process' }, data: { png: opts.png ?? TINY_PNG } })
  return out
}
