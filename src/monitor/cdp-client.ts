// The browser-level CDP WebSocket client: commands with ids, events to one handler. Over `ws`
// directly (not chrome-remote-interface) for one reason: flow control. A page can make the browser
// send thousands of messages at once (console floods, 200,000 binding calls) and one socket read
// hands over up to 2 MB of them; handled synchronously as they arrive, they hold the event loop
// for hundreds of milliseconds and /healthz, the API and SSE wait. Here messages are queued raw
// and handled in slices of at most SLICE_MS, yielding to other I/O in between. The socket is read
// on while a backlog waits: a new tab is paused until the daemon resumes it, and its attach must
// not wait in the kernel behind a flood. While more than QUEUE_HIGH_BYTES wait, a loud page's
// console messages are shed as they arrive (counted: each consumes its seq); only past
// QUEUE_MAX_BYTES (a flood of what cannot be shed) is the socket paused.
// One message can outlast a slice by itself (a console call with 5,000 long arguments: tens of ms);
// after such a slice the loop gets as long again for other I/O before the next one (see drain).
// Console arguments over the envelope cap are cut in the raw frame first (console-frame-cut.ts).
import WebSocket from 'ws'
import { Queue } from '../util/queue.js'
import { cutConsoleFrame, isConsoleEventFrame } from './console-frame-cut.js'

/** One CDP message as received (events have method, answers have id). */
export interface CdpMessage {
  id?: number
  method: string
  params?: unknown
  sessionId?: string
  result?: unknown
  error?: { code?: number; message?: string; data?: string }
}

/** Handling time per turn of the event loop before other I/O gets its turn. */
export const SLICE_MS = 10
/** The longest pause after an overrun slice (the queue is bounded, so this only delays, never grows, the backlog). */
export const MAX_REST_MS = 100
/** Raw bytes received and not yet handled above which a loud page's console messages are shed as they arrive. */
export const QUEUE_HIGH_BYTES = 8 * 1024 * 1024
/** Above this the socket is paused (messages that cannot be shed: at least one message is always taken). */
export const QUEUE_MAX_BYTES = 2 * QUEUE_HIGH_BYTES
/** A paused socket is resumed once the backlog is down to this. */
const QUEUE_LOW_BYTES = QUEUE_HIGH_BYTES / 4
/** Like chrome-remote-interface: a DevTools message is never refused for its size (the browser would lose the connection). */
const MAX_PAYLOAD = 256 * 1024 * 1024

/** How Chromium starts every event message: `{"method":"<name>",...`. */
const EVENT_PREFIX = Buffer.from('{"method":"')

/** Buffer's own latin1 decoder (what toString('latin1', …) calls after looking the codec up, once per message here). */
type LatinSliceable = Buffer & { latin1Slice(start: number, end: number): string }

/** Frames at least this large give their bytes back as soon as they are parsed or cut (releaseFrame). */
export const RELEASE_MIN_BYTES = 64 * 1024

/**
 * Frees a large frame's bytes now instead of at the next full garbage collection. A frame that
 * waited in the queue while young-generation collections ran has a promoted Buffer object, and the
 * bytes it holds (outside the JS heap, where V8 counts up to 64 MB before it collects for them)
 * stay until a mark-compact: a burst of 1-8 MB console frames kept tens of MB that way. Moving the
 * ArrayBuffer's contents to a new, unreferenced one (a transfer, no copy) detaches the frame and
 * leaves the bytes to the next young collection. Only for a Buffer that is its whole ArrayBuffer
 * (ws assembles a frame that arrived in several reads into one of its own); a view into a shared
 * one is left as it is. The frame must not be read afterwards (its length reads 0).
 */
export function releaseFrame(data: Buffer): void {
  const ab = data.buffer
  if (data.byteLength < RELEASE_MIN_BYTES || data.byteOffset !== 0 || data.byteLength !== ab.byteLength) return
  if (ab instanceof ArrayBuffer) structuredClone(ab, { transfer: [ab] })
}

/** A command the browser answered with an error (message and code as the browser sent them). */
export class CdpCommandError extends Error {
  constructor(
    readonly method: string,
    readonly response: { code?: number; message?: string; data?: string },
  ) {
    super(`${response.message ?? 'error'}${response.data ? ` (${response.data})` : ''}`)
    this.name = 'CdpCommandError'
  }
}

/** The WebSocket to the browser is closed: every command in flight, and every one sent after, fails with this. */
export class ConnectionClosedError extends Error {
  constructor() {
    super('WebSocket connection closed')
    this.name = 'ConnectionClosedError'
  }
}

interface Pending {
  resolve: (r: unknown) => void
  reject: (e: Error) => void
  method: string
}

export class CdpClient {
  private nextId = 1
  private readonly pending = new Map<number, Pending>()
  private readonly queue = new Queue<Buffer>()
  private queuedBytes = 0
  private scheduled = false
  /** performance.now() before which no slice starts (set after a slice that overran). */
  private restUntil = 0
  private paused = false
  private closed = false
  private eventHandler: (m: CdpMessage) => void = () => undefined
  private unread: ((method: string) => boolean) | undefined
  private urgent: ((method: string) => boolean) | undefined
  private shed: ((frame: Buffer) => boolean) | undefined
  private disconnectHandler: () => void = () => undefined

  private constructor(
    private readonly ws: WebSocket,
    private readonly maxEnvelopeBytes: number,
  ) {
    ws.on('message', (data: Buffer) => this.receive(data))
    ws.on('close', () => this.onClose())
    ws.on('error', () => undefined) // 'close' follows
  }

  /**
   * Opens the WebSocket; rejects when it cannot be opened. `maxEnvelopeBytes` is the envelope cap
   * console arguments are cut to in the raw frame.
   */
  static connect(url: string, maxEnvelopeBytes: number): Promise<CdpClient> {
    return new Promise((resolve, reject) => {
      // The browser's own JSON: its UTF-8 is not validated twice (ws would scan every byte before JSON.parse does).
      const ws = new WebSocket(url, { maxPayload: MAX_PAYLOAD, perMessageDeflate: false, skipUTF8Validation: true })
      const fail = (err: Error) => {
        ws.removeAllListeners()
        ws.on('error', () => undefined)
        ws.terminate()
        reject(err)
      }
      ws.once('error', fail)
      ws.once('unexpected-response', (_req, res) => fail(new Error(`unexpected server response: ${res.statusCode}`)))
      ws.once('open', () => {
        ws.removeListener('error', fail)
        resolve(new CdpClient(ws, maxEnvelopeBytes))
      })
    })
  }

  on(event: 'event', handler: (message: CdpMessage) => void): void
  on(event: 'disconnect', handler: () => void): void
  on(event: 'event' | 'disconnect', handler: ((m: CdpMessage) => void) | (() => void)): void {
    if (event === 'event') this.eventHandler = handler as (m: CdpMessage) => void
    else this.disconnectHandler = handler as () => void
  }

  /**
   * Events nobody reads: dropped unparsed, their name read from the message's first bytes (with
   * Network enabled Chromium sends a third of a page's CDP bytes as events no collector handles).
   * Asked when the message's turn comes, just before it would be parsed and dispatched.
   */
  ignoreEvents(unread: (method: string) => boolean): void {
    this.unread = unread
  }

  /**
   * Events handled as they arrive, ahead of the queue: a new target is paused until the daemon
   * resumes it, and behind a flood's backlog (up to QUEUE_HIGH_BYTES) its attach would wait seconds.
   * Only for events whose handling needs nothing queued before them.
   */
  handleAtOnce(urgent: (method: string) => boolean): void {
    this.urgent = urgent
  }

  /**
   * Console messages arriving while more than QUEUE_HIGH_BYTES wait are offered here before they
   * are queued; `shed` returns true when it accounted for the message as shed (it is then dropped
   * unparsed), false to queue it as usual (a quiet page's).
   */
  shedConsoleWhenBacklogged(shed: (frame: Buffer) => boolean): void {
    this.shed = shed
  }

  send(method: string, params?: object, sessionId?: string): Promise<unknown> {
    if (this.closed) return Promise.reject(new ConnectionClosedError())
    const id = this.nextId++
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, method })
      const message: Record<string, unknown> = { id, method, params: params ?? {} }
      if (sessionId) message.sessionId = sessionId
      this.ws.send(JSON.stringify(message), err => {
        if (err && this.pending.delete(id)) reject(err)
      })
    })
  }

  /** Messages received and not yet handled. */
  get queuedMessages(): number {
    return this.queue.length
  }

  /**
   * Handles every message received and not yet handled, now, in one go (a clean stop: what the
   * daemon received becomes events, stored or counted, before the store closes).
   */
  handleQueued(): void {
    while (this.queue.length > 0) this.handleNext()
  }

  async close(): Promise<void> {
    if (this.ws.readyState === WebSocket.CLOSED) return
    await new Promise<void>(resolve => {
      this.ws.once('close', () => resolve())
      this.ws.close()
    })
  }

  private receive(data: Buffer): void {
    // A console argument longer than the envelope cap is cut in the raw frame, as it arrives: the
    // huge frame is released at once instead of waiting in the queue and being parsed whole.
    if (data.length > this.maxEnvelopeBytes && isConsoleEventFrame(data)) {
      const cut = cutConsoleFrame(data, this.maxEnvelopeBytes)
      if (cut) {
        releaseFrame(data)
        data = cut
      }
    }
    if (this.urgent && this.queue.length > 0 && this.isNamed(data, this.urgent)) {
      this.handle(data)
      return
    }
    if (this.queuedBytes > QUEUE_HIGH_BYTES && this.shed && isConsoleEventFrame(data) && this.shed(data)) {
      releaseFrame(data)
      return
    }
    this.queue.push(data)
    this.queuedBytes += data.length
    if (!this.paused && this.queuedBytes > QUEUE_MAX_BYTES) {
      this.paused = true
      this.ws.pause()
    }
    if (!this.scheduled) this.schedule()
  }

  private schedule(): void {
    this.scheduled = true
    const rest = this.restUntil - performance.now()
    if (rest > 0) setTimeout(() => this.drain(), Math.ceil(rest))
    else setImmediate(() => this.drain())
  }

  /** Handles queued messages for at most SLICE_MS, then yields to the rest of the event loop. */
  private drain(): void {
    const start = performance.now()
    const until = start + SLICE_MS
    // The clock is read after every 16 small messages (they take microseconds; reading it costs
    // one) and after every large one.
    for (let n = 1; this.queue.length > 0; n++) {
      const bytes = this.handleNext()
      if (((n & 15) === 0 || bytes > 16 * 1024) && performance.now() >= until) break
    }
    const now = performance.now()
    // A slice that overran by more than a slice (one huge message) is followed by a rest as long as
    // the overrun: a new HTTP connection needs two poll phases (accept, then its request), and
    // with a huge message handled in every turn between them a /healthz probe would wait for two
    // or three of them. Half the loop for the browser, half for the rest, while messages are huge.
    const over = now - start - SLICE_MS
    if (over > SLICE_MS) this.restUntil = now + Math.min(over, MAX_REST_MS)
    if (this.paused && this.queuedBytes <= QUEUE_LOW_BYTES && !this.closed) {
      this.paused = false
      this.ws.resume()
    }
    if (this.queue.length > 0) this.schedule()
    else this.scheduled = false
  }

  /** Handles the oldest queued message; returns its size in bytes. */
  private handleNext(): number {
    const data = this.queue.shift()!
    this.queuedBytes -= data.length
    return this.handle(data)
  }

  /** Parses and dispatches one message; returns its size in bytes. */
  private handle(data: Buffer): number {
    const bytes = data.length
    if (this.unread && this.isNamed(data, this.unread)) {
      releaseFrame(data)
      return bytes
    }
    let message: CdpMessage
    // toString() without arguments is Buffer's direct UTF-8 path (with an encoding name it looks the codec up first).
    try {
      message = JSON.parse(data.toString()) as CdpMessage
    } catch {
      return bytes
    } finally {
      releaseFrame(data)
    }
    if (message.id !== undefined) {
      const p = this.pending.get(message.id)
      if (p) {
        this.pending.delete(message.id)
        if (message.error) p.reject(new CdpCommandError(p.method, message.error))
        else p.resolve(message.result ?? {})
      }
    } else if (message.method) this.eventHandler(message)
    return bytes
  }

  /** True for an event `named` names (a message laid out otherwise is parsed as usual). */
  private isNamed(data: Buffer, named: (method: string) => boolean): boolean {
    if (data.length <= EVENT_PREFIX.length) return false
    // Byte by byte: Buffer#compare with offsets is a native call with argument checks, dearer than these 11 reads.
    for (let i = 0; i < EVENT_PREFIX.length; i++) if (data[i] !== EVENT_PREFIX[i]) return false
    const end = data.indexOf(0x22, EVENT_PREFIX.length) // the closing quote; CDP method names have no escapes
    return (
      end > 0 &&
      end - EVENT_PREFIX.length <= 64 &&
      named((data as LatinSliceable).latin1Slice(EVENT_PREFIX.length, end))
    )
  }

  private onClose(): void {
    if (this.closed) return
    // What arrived before the close is still delivered, in order, before the disconnect.
    this.handleQueued()
    this.closed = true
    const err = new ConnectionClosedError()
    for (const p of this.pending.values()) p.reject(err)
    this.pending.clear()
    this.disconnectHandler()
  }
}
