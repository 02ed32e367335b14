// The DevTools discovery endpoints (/json/version, /json/list, ...) answered through the proxy: the
// browser's own answer, fetched (bounded in size and time) and rewritten so that every WebSocket
// URL in it points at the proxy.
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http'
import { request as httpsRequest } from 'node:https'
import type { Logger } from '../log.js'
import { sendError } from './admission.js'
import { httpBaseOf, rewriteDiscovery, saneHost } from './discovery.js'

export interface DiscoveryContext {
  /** The current browser's WebSocket URL (its HTTP endpoint is derived from it). */
  browserUrl: string
  /** host:port of the proxy, for clients that sent no usable Host header. */
  listenHost: string
  /** Carry a ?token= the client authenticated with into the rewritten WebSocket URLs (auth on). */
  carryToken: boolean
  logger: Logger
}

export async function answerDiscovery(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  { browserUrl, listenHost, carryToken, logger }: DiscoveryContext,
): Promise<void> {
  const queryToken = url.searchParams.get('token') ?? undefined
  url.searchParams.delete('token')
  const upstreamUrl = new URL(url.pathname + url.search, httpBaseOf(browserUrl))
  let answer: { status: number; contentType: string | undefined; body: Buffer }
  try {
    answer = await fetchUpstream(upstreamUrl, req.method ?? 'GET')
  } catch (err) {
    logger.warn({ err }, 'CDP proxy discovery request to the browser failed')
    return sendError(res, 503, 'browser_unavailable', 'the browser did not answer the discovery request; retry shortly')
  }
  const proxyHost = saneHost(req.headers.host) ?? listenHost
  if (answer.status === 200 && answer.contentType?.includes('json')) {
    let parsed: unknown
    try {
      parsed = JSON.parse(answer.body.toString('utf8'))
    } catch {
      parsed = undefined
    }
    if (parsed !== undefined) {
      const body = JSON.stringify(rewriteDiscovery(parsed, proxyHost, carryToken ? queryToken : undefined), null, 2)
      res.writeHead(200, {
        'content-type': 'application/json; charset=UTF-8',
        'content-length': Buffer.byteLength(body),
      })
      res.end(body)
      return
    }
  }
  res.writeHead(answer.status, {
    'content-type': answer.contentType ?? 'text/plain',
    'content-length': answer.body.length,
  })
  res.end(answer.body)
}

function fetchUpstream(
  url: URL,
  method: string,
): Promise<{ status: number; contentType: string | undefined; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, { method, timeout: 10_000 }, res => {
      const chunks: Buffer[] = []
      let size = 0
      res.on('data', (c: Buffer) => {
        size += c.length
        if (size > 16 * 1024 * 1024) {
          res.destroy(new Error('discovery answer too large'))
          return
        }
        chunks.push(c)
      })
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 502,
          contentType: res.headers['content-type'],
          body: Buffer.concat(chunks),
        }),
      )
      res.on('error', reject)
    })
    req.on('timeout', () => req.destroy(new Error('discovery request timed out')))
    req.on('error', reject)
    req.end()
  })
}
