// HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/) as TypeScript types: only what we write.
// Custom fields start with "_" as HAR 1.2 allows (Chrome DevTools does the same, e.g. response._error).
export interface HarNameValue {
  name: string
  value: string
}

export interface HarPostData {
  mimeType: string
  text: string
}

export interface HarRequest {
  method: string
  url: string
  httpVersion: string
  cookies: HarNameValue[]
  headers: HarNameValue[]
  queryString: HarNameValue[]
  postData?: HarPostData
  headersSize: number
  bodySize: number
}

export interface HarContent {
  size: number
  mimeType: string
  text?: string
  comment?: string
}

export interface HarResponse {
  status: number
  statusText: string
  httpVersion: string
  cookies: HarNameValue[]
  headers: HarNameValue[]
  content: HarContent
  redirectURL: string
  headersSize: number
  bodySize: number
  /** Chrome's convention for a failed request: the network error text (status is 0). */
  _error?: string
  /** The body never completed (network_response_incomplete's reason): status and headers as they arrived. */
  _incomplete?: string
}

export interface HarTimings {
  blocked: number
  dns: number
  connect: number
  ssl: number
  send: number
  wait: number
  receive: number
  comment?: string
}

export interface HarEntry {
  pageref?: string
  startedDateTime: string
  time: number
  request: HarRequest
  response: HarResponse
  cache: Record<string, never>
  timings: HarTimings
  comment?: string
  /** Where the entry came from, so a reader can find the envelopes (not part of HAR; "_" fields are allowed). */
  _resourceType?: string
  _requestId: string
  _sessionId?: string
  _seq: number[]
  /** A WebSocket's messages on its handshake entry, as Chrome DevTools exports them. */
  _webSocketMessages?: HarWebSocketMessage[]
}

export interface HarWebSocketMessage {
  type: 'send' | 'receive'
  /** Seconds since the epoch. */
  time: number
  opcode: number
  data: string
}

export interface HarPage {
  startedDateTime: string
  id: string
  title: string
  pageTimings: { onContentLoad: number; onLoad: number }
  _targetId?: string
}

export interface Har {
  log: {
    version: '1.2'
    creator: { name: string; version: string }
    pages: HarPage[]
    entries: HarEntry[]
    comment?: string
  }
}
