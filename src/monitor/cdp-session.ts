// One CDP session as collectors see it (a target's flattened session, or the browser itself):
// typed send / sendMayFail / on, its listeners, its collectors' detaches, its in-flight commands.
// AttachedTarget adds a target's context bookkeeping; the browser scope is a plain CdpSessionCore.
import type { Logger } from '../log.js'
import { Disposer, type Dispose } from '../util/disposer.js'
import { HandlerRegistry, type Handler, type ListenedEvents } from './handlers.js'
import { ProtocolError, toProtocolError, type ProtocolErrorLog } from './protocol-error.js'
import type { CdpCommand, CdpEvent, CdpSession, CommandParams, CommandResult, EventParams } from './types.js'

/** The connection's raw send: a command on a session id (undefined = the browser). */
export type RawSend = <M extends CdpCommand>(
  method: M,
  params: CommandParams<M> | undefined,
  sessionId: string | undefined,
) => Promise<CommandResult<M>>

/**
 * Events Chromium sends in volume once Network is enabled that nothing in the daemon reads: the
 * connection drops them unparsed (a heavy page: 420 of 1,120 messages, 30% of the bytes, per load).
 * Subscribing to one is a programming error (on() throws), so the list cannot go stale silently.
 */
export const UNREAD_EVENTS: ReadonlySet<string> = new Set([
  'Network.dataReceived',
  'Network.requestWillBeSentExtraInfo',
  'Network.responseReceivedExtraInfo',
])

export class CdpSessionCore implements CdpSession {
  private readonly handlers: HandlerRegistry
  /** Collectors' detaches, run once when the session closes. */
  private readonly detaches: Disposer
  /** Rejecters of commands awaiting an answer. */
  private readonly inFlight = new Set<() => void>()
  private readonly abort = new AbortController()

  constructor(
    private readonly raw: RawSend,
    /** Undefined for the browser scope. */
    private readonly rawSessionId: string | undefined,
    protected readonly errors: ProtocolErrorLog,
    protected readonly logger: Logger,
    /** Names the session in errors and logs ("target <id>", "browser"). */
    private readonly label: string,
    /** The connection's count of handlers per event (see ListenedEvents). */
    listened?: ListenedEvents,
  ) {
    this.handlers = new HandlerRegistry(listened)
    this.detaches = new Disposer(err => logger.warn({ err, session: label }, 'collector detach threw'))
  }

  get signal(): AbortSignal {
    return this.abort.signal
  }
  get closed(): boolean {
    return this.abort.signal.aborted
  }

  send<M extends CdpCommand>(method: M, params?: CommandParams<M>): Promise<CommandResult<M>> {
    if (this.closed) return Promise.reject(this.closedError(method))
    // Chromium never answers commands of a session that went away; settle them ourselves on close,
    // or a collector awaiting one in attach() would never hand back its detach().
    return new Promise<CommandResult<M>>((resolve, reject) => {
      const fail = () => reject(this.closedError(method))
      this.inFlight.add(fail)
      this.raw(method, params, this.rawSessionId).then(
        r => {
          this.inFlight.delete(fail)
          resolve(r)
        },
        (e: unknown) => {
          this.inFlight.delete(fail)
          reject(toProtocolError(method, e))
        },
      )
    })
  }

  sendMayFail<M extends CdpCommand>(method: M, params?: CommandParams<M>): Promise<CommandResult<M> | undefined> {
    return this.send(method, params).catch((err: unknown) => {
      this.errors.report(method, err, { session: this.label })
      return undefined
    })
  }

  on<E extends CdpEvent>(event: E, handler: (params: EventParams<E>) => void): () => void {
    if (UNREAD_EVENTS.has(event)) throw new Error(`${event} is in UNREAD_EVENTS: the connection drops it unparsed`)
    if (this.closed) return () => undefined
    return this.handlers.add(event, handler as Handler)
  }

  /** True while a handler on this session listens to `event`. */
  listens(event: CdpEvent): boolean {
    return this.handlers.has(event)
  }

  /** Records a collector's detach; if the session already closed, runs it at once. */
  addDetach(detach: Dispose): void {
    this.detaches.add(detach)
  }

  /** Delivers one event of this session to its handlers (a throwing handler never stops the others). */
  dispatch(method: string, params: unknown): void {
    this.handlers.dispatch(method, params, this.logger, this.label)
  }

  /** Aborts the signal, rejects in-flight commands, runs every collector's detach, drops all listeners. Idempotent. */
  close(): void {
    if (this.closed) return
    this.abort.abort()
    for (const fail of this.inFlight) fail()
    this.inFlight.clear()
    this.detaches.dispose()
    this.handlers.clear()
  }

  counts(): { listeners: number; detaches: number; inFlight: number } {
    return { listeners: this.handlers.size, detaches: this.detaches.size, inFlight: this.inFlight.size }
  }

  private closedError(method: string): ProtocolError {
    return new ProtocolError('closed', method, `${this.label} is detached`)
  }
}
