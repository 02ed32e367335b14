// The body fetches of one session's requests: which bodies are wanted, and Network.getResponseBody /
// Network.getRequestPostData through the queue all sessions share, each under the fetch timeout.
import type { Protocol } from 'devtools-protocol'
import { withTimeout, type Clock, type TargetSession } from '../src/collector-kit.js'
import { cutBody, isTextMime, postDataText, type BodyFetchQueue, type CutBody } from './network-body.js'
import { headerText, type ResponseRecord } from './network-events.js'

export interface BodyFetchSettings {
  bodyMaxBytes: number
  bodyTimeoutMs: number
  isEnabled?: () => boolean
  clock: Clock
}

export class BodyFetches {
  /** Groups this session's queued fetches so close() can cancel them. */
  private readonly owner = {}
  private closed = false

  constructor(
    private readonly session: TargetSession,
    private readonly settings: BodyFetchSettings,
    private readonly queue: BodyFetchQueue,
  ) {}

  /** The session is gone: its queued fetches answer at once without a body, and no new one is wanted. */
  close(): void {
    this.closed = true
    this.queue.cancelOwner(this.owner)
  }

  wantsBody(response: ResponseRecord): boolean {
    return (
      this.settings.bodyMaxBytes > 0 &&
      isTextMime(response.mimeType) &&
      !this.closed &&
      this.settings.isEnabled?.() !== false
    )
  }

  /**
   * Chromium inlines a request body only up to maxPostDataSize and only when it is plain bytes: a
   * big form, a multipart upload or a long JSON body says hasPostData and must be fetched.
   */
  wantsPostData(p: Protocol.Network.RequestWillBeSentEvent): boolean {
    const partial = p.request.postDataEntries?.some(e => e.bytes === undefined) === true
    return (
      p.request.hasPostData === true &&
      (p.request.postData === undefined || partial) &&
      this.settings.bodyMaxBytes > 0 &&
      this.settings.isEnabled?.() !== false
    )
  }

  /** Network.getResponseBody, cut to the cap. Evicted from Chromium's buffer, redirected or target gone: no body, nothing else lost. */
  responseBody(requestId: string, via: TargetSession, respond: (body: CutBody | undefined) => void): void {
    const { bodyMaxBytes } = this.settings
    this.queueFetch(
      () =>
        via
          .sendMayFail('Network.getResponseBody', { requestId })
          .then(r => r && cutBody(r.body, r.base64Encoded, bodyMaxBytes)),
      respond,
    )
  }

  /** Network.getRequestPostData, as text (multipart binary parts summarised). The request may be gone from Chromium's memory: best effort. */
  postData(p: Protocol.Network.RequestWillBeSentEvent, respond: (body: CutBody | undefined) => void): void {
    const contentType = headerText(p.request.headers, 'content-type')
    const { bodyMaxBytes } = this.settings
    this.queueFetch(
      () =>
        this.session
          .sendMayFail('Network.getRequestPostData', { requestId: p.requestId })
          .then(r => r && postDataText(r.postData, r.base64Encoded, contentType, bodyMaxBytes)),
      respond,
    )
  }

  /**
   * Runs a body fetch in the shared queue; `respond` gets the body, or undefined when it cannot be
   * had (queue full, failed, slower than bodyTimeoutMs, session detached). The queue slot is freed
   * when the fetch settles or times out, whichever is first.
   */
  private queueFetch(fetch: () => Promise<CutBody | undefined>, respond: (body: CutBody | undefined) => void): void {
    const { bodyTimeoutMs, clock } = this.settings
    this.queue.submit({
      owner: this.owner,
      cancel: () => respond(undefined),
      run: () => withTimeout(fetch(), bodyTimeoutMs, { timers: clock }).then(respond, () => respond(undefined)),
    })
  }
}
