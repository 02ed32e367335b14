// What an automation client told the browser: one cdp_command per command a proxy client sends,
// emitted when the browser answers it (ok or a protocol error) or when the connection ends first
// (no_answer). The browser's events are never parsed: an answer is recognised by its first bytes
// (Chromium writes `{"id":N,` first and `"sessionId":"..."}` last), and only error answers, target
// attachments and, when parameters are captured, results are parsed whole.
import type { Emit, EventInput } from '../pipeline/pipeline.js'
import type { Logger } from '../log.js'
import type { CommandStamp } from '../agent/step-registry.js'
import { ALWAYS_MASKED, cutText, inputFacts, type InputFacts } from './command-facts.js'
import { CommandFolds } from './command-fold.js'

export { FOLD_AFTER } from './command-fold.js'
import { SESSION_KEY, sessionIdAtEnd } from '../util/cdp-frame.js'

export interface CommandLogOptions {
  emit: Emit
  connectionId: string
  /** A page-level connection (/devtools/page/<id>) talks to one target: commands without a session are its. */
  targetId?: string
  /** Store parameters and results as JSON text cut to maxBytes (redacted by the pipeline); off by default. */
  captureParams?: { maxBytes: number }
  /** Commands awaiting an answer at most; past it further commands are relayed but not recorded (counted). */
  maxPending?: number
  logger?: Logger
  /** Monotonic milliseconds (tests). */
  now?: () => number
  /** The agent step and trace a command sent now belongs to. */
  stampFor?: () => CommandStamp | undefined
}

export type CommandOutcome = 'ok' | 'error' | 'no_answer'

interface Pending {
  id: number
  method: string
  sessionId?: string
  startedAt: number
  requestBytes: number
  params?: string
  paramsTruncated?: boolean
  stamp?: CommandStamp
  input?: InputFacts
}

/** With --capture-command-params: each command's parameters and result are cut to this. */
export const COMMAND_PARAMS_MAX_BYTES = 4096
const SOURCE = { kind: 'local_process' } as const
const DEFAULT_MAX_PENDING = 10_000
const OPEN_BRACE = 0x7b
const ANSWER_PREFIX = Buffer.from('{"id":')
const ERROR_AFTER_ID = Buffer.from(',"error":')
const ATTACHED = Buffer.from('"method":"Target.attachedToTarget"')
const DETACHED = Buffer.from('"method":"Target.detachedFromTarget"')

export class CommandLog {
  private readonly pending = new Map<string, Pending>()
  private readonly folds: CommandFolds<Pending>
  private readonly targetOfSession = new Map<string, string>()
  private readonly maxPending: number
  private readonly now: () => number
  /** Commands relayed without a record because too many were waiting (a client that never reads answers). */
  untracked = 0
  /** Commands whose record the capture configuration leaves out (control off): cdp_disconnect.telemetry_excluded. */
  excluded = 0
  /** Commands without a record under pressure (untracked, shed, over a cap): cdp_disconnect.telemetry_dropped. */
  dropped = 0
  private ended = false

  constructor(private readonly opts: CommandLogOptions) {
    this.maxPending = opts.maxPending ?? DEFAULT_MAX_PENDING
    this.now = opts.now ?? (() => performance.now())
    this.folds = new CommandFolds<Pending>(this.now, (p, fold) =>
      this.send({ ...this.identity(p), outcome: 'ok', ...fold, ...p.stamp }, fold.count),
    )
  }

  /** A frame from the client (before it is relayed). */
  fromClient(data: Buffer, binary: boolean): void {
    if (this.ended || binary || data.length === 0 || data[0] !== OPEN_BRACE) return
    type Command = { id?: unknown; method?: unknown; sessionId?: unknown; params?: unknown }
    // Parameters are needed only when stored (or for input commands, which are few); otherwise the
    // common layout is read without parsing.
    let msg: Command | undefined = this.opts.captureParams ? undefined : peekCommand(data)
    if (msg && typeof msg.method === 'string' && msg.method.startsWith('Input.')) msg = undefined
    if (!msg) {
      try {
        msg = JSON.parse(data.toString()) as Command
      } catch {
        return // the browser answers what it cannot parse without an id we could match
      }
    }
    if (typeof msg.id !== 'number' || typeof msg.method !== 'string') return
    const sessionId = typeof msg.sessionId === 'string' ? msg.sessionId : undefined
    const key = keyOf(sessionId, msg.id)
    const earlier = this.pending.get(key)
    if (earlier)
      this.record(earlier, 'no_answer') // the client reused an id before its answer came
    else if (this.pending.size >= this.maxPending) {
      this.dropped++
      if (this.untracked++ === 0)
        this.opts.logger?.warn(
          { connectionId: this.opts.connectionId, pending: this.pending.size },
          'CDP proxy client has too many unanswered commands; further ones are relayed but not recorded',
        )
      return
    }
    const p: Pending = {
      id: msg.id,
      method: msg.method,
      sessionId,
      startedAt: this.now(),
      requestBytes: data.length,
    }
    const stamp = this.opts.stampFor?.()
    if (stamp) p.stamp = stamp
    if (msg.method.startsWith('Input.')) p.input = inputFacts(msg.method, msg.params)
    if (this.opts.captureParams && msg.params !== undefined && msg.params !== null && typeof msg.params === 'object') {
      const masked = ALWAYS_MASKED[msg.method]?.(msg.params as Record<string, unknown>) ?? msg.params
      const cut = cutText(JSON.stringify(masked), this.opts.captureParams.maxBytes)
      p.params = cut.text
      if (cut.truncated) p.paramsTruncated = true
    }
    this.pending.set(key, p)
  }

  /** A frame from the browser (before it is relayed). */
  fromBrowser(data: Buffer, binary: boolean): void {
    if (this.ended || binary || data.length < 8) return
    if (startsWith(data, ANSWER_PREFIX)) {
      this.answer(data)
      return
    }
    // Sessions the client attaches to name their target only in this event (its method comes first).
    const head = data.subarray(0, 64)
    if (head.indexOf(ATTACHED) !== -1) this.attached(data)
    else if (head.indexOf(DETACHED) !== -1) this.detached(data)
  }

  /** The connection is over: every command still waiting is recorded as no_answer. */
  end(): void {
    if (this.ended) return
    for (const p of this.pending.values()) this.record(p, 'no_answer')
    this.pending.clear()
    this.folds.flushAll(true)
    this.ended = true
  }

  private answer(data: Buffer): void {
    let i = ANSWER_PREFIX.length
    let id = 0
    let digits = 0
    for (; i < data.length && data[i]! >= 0x30 && data[i]! <= 0x39; i++, digits++) id = id * 10 + (data[i]! - 0x30)
    if (digits === 0) return
    const sessionId = sessionIdAtEnd(data)
    const isError = startsWith(data, ERROR_AFTER_ID, i)
    let key = keyOf(sessionId, id)
    let p = this.pending.get(key)
    // Chromium answers a command for a session it does not know without the session id.
    if (!p && isError && sessionId === undefined) {
      for (const [k, q] of this.pending)
        if (q.id === id) {
          key = k
          p = q
          break
        }
    }
    if (!p) return
    this.pending.delete(key)
    const responseBytes = data.length
    if (isError) {
      let error: { code?: unknown; message?: unknown } = {}
      try {
        error = (JSON.parse(data.toString()) as { error?: typeof error }).error ?? {}
      } catch {
        /* an error we cannot read is still an error */
      }
      this.record(p, 'error', {
        responseBytes,
        errorCode: typeof error.code === 'number' ? error.code : undefined,
        errorMessage: typeof error.message === 'string' ? error.message : undefined,
      })
      return
    }
    let result: string | undefined
    let resultTruncated = false
    if (this.opts.captureParams) {
      try {
        const parsed = (JSON.parse(data.toString()) as { result?: unknown }).result
        if (parsed !== undefined) {
          const cut = cutText(JSON.stringify(parsed), this.opts.captureParams.maxBytes)
          result = cut.text
          resultTruncated = cut.truncated
        }
      } catch {
        /* the outcome stands without its result */
      }
    }
    this.record(p, 'ok', { responseBytes, result, resultTruncated })
  }

  private attached(data: Buffer): void {
    try {
      const m = JSON.parse(data.toString()) as { params?: { sessionId?: unknown; targetInfo?: { targetId?: unknown } } }
      const sid = m.params?.sessionId
      const tid = m.params?.targetInfo?.targetId
      if (typeof sid === 'string' && typeof tid === 'string') this.targetOfSession.set(sid, tid)
    } catch {
      /* not ours to fix */
    }
  }

  private detached(data: Buffer): void {
    try {
      const sid = (JSON.parse(data.toString()) as { params?: { sessionId?: unknown } }).params?.sessionId
      if (typeof sid === 'string') this.targetOfSession.delete(sid)
    } catch {
      /* not ours to fix */
    }
  }

  private record(
    p: Pending,
    outcome: CommandOutcome,
    a: {
      responseBytes?: number
      errorCode?: number
      errorMessage?: string
      result?: string
      resultTruncated?: boolean
    } = {},
  ): void {
    const durationMs = Math.round((this.now() - p.startedAt) * 1000) / 1000
    // Commands of different steps never share a fold: each keeps its step.
    const foldKey = `${p.sessionId ?? ''}\u0000${p.method}\u0000${p.stamp?.step_id ?? ''}`
    if (outcome === 'ok' && this.folds.add(foldKey, p, durationMs, a.responseBytes ?? 0)) return
    this.send(
      {
        ...this.identity(p),
        duration_ms: durationMs,
        outcome,
        ...(a.errorCode !== undefined ? { error_code: a.errorCode } : {}),
        ...(a.errorMessage !== undefined ? { error_message: a.errorMessage } : {}),
        request_bytes: p.requestBytes,
        ...(a.responseBytes !== undefined ? { response_bytes: a.responseBytes } : {}),
        ...(p.params !== undefined ? { params: p.params } : {}),
        ...(p.paramsTruncated ? { params_truncated: true } : {}),
        ...(a.result !== undefined ? { result: a.result } : {}),
        ...(a.resultTruncated ? { result_truncated: true } : {}),
        ...p.input,
        ...p.stamp,
      },
      1,
    )
  }

  /** The connection's commands without a record, as cdp_disconnect carries them. */
  counts(): { telemetry_excluded: number; telemetry_dropped: number } {
    return { telemetry_excluded: this.excluded, telemetry_dropped: this.dropped }
  }

  /** Emits a record standing for `commands` commands and counts them when the pipeline did not store it. */
  private send(data: Extract<EventInput, { type: 'cdp_command' }>['data'], commands: number): void {
    const r = this.opts.emit({ type: 'cdp_command', source: SOURCE, data })
    if (r.dropped === 'category_disabled') this.excluded += commands
    else if (r.dropped !== undefined) this.dropped += commands
  }

  /** Which command a record is about: its connection, id, method, session and target. */
  private identity(p: Pending): {
    connection_id: string
    id: number
    method: string
    session_id?: string
    target_id?: string
  } {
    const targetId = p.sessionId !== undefined ? this.targetOfSession.get(p.sessionId) : this.opts.targetId
    return {
      connection_id: this.opts.connectionId,
      id: p.id,
      method: p.method,
      ...(p.sessionId !== undefined ? { session_id: p.sessionId } : {}),
      ...(targetId !== undefined ? { target_id: targetId } : {}),
    }
  }
}

const COMMAND_PREFIX = Buffer.from('{"id":')
const METHOD_AFTER_ID = Buffer.from(',"method":"')

/**
 * id, method and session of a command laid out `{"id":N,"method":"M",...}` (Playwright, most raw
 * clients) with its session, if any, last; undefined for any other layout (then it is parsed).
 * A "sessionId" anywhere but last (inside params, or before them) also sends it to the parser.
 */
function peekCommand(data: Buffer): { id: number; method: string; sessionId?: string } | undefined {
  if (!startsWith(data, COMMAND_PREFIX)) return undefined
  let i = COMMAND_PREFIX.length
  let id = 0
  const from = i
  for (; i < data.length && data[i]! >= 0x30 && data[i]! <= 0x39; i++) id = id * 10 + (data[i]! - 0x30)
  if (i === from || i - from > 15 || !startsWith(data, METHOD_AFTER_ID, i)) return undefined
  const start = i + METHOD_AFTER_ID.length
  const end = data.indexOf(0x22, start)
  if (end === -1 || end - start > 256) return undefined
  const method = data.toString('latin1', start, end)
  if (method.includes('\\')) return undefined
  const sessionId = sessionIdAtEnd(data)
  const firstSession = data.indexOf(SESSION_KEY, end)
  const lastSession = sessionId === undefined ? -1 : data.length - 2 - sessionId.length - SESSION_KEY.length
  if (firstSession !== lastSession) return undefined
  return sessionId === undefined ? { id, method } : { id, method, sessionId }
}

function keyOf(sessionId: string | undefined, id: number): string {
  return sessionId === undefined ? String(id) : `${sessionId}:${id}`
}

function startsWith(data: Buffer, prefix: Buffer, at = 0): boolean {
  if (data.length < at + prefix.length) return false
  for (let i = 0; i < prefix.length; i++) if (data[at + i] !== prefix[i]) return false
  return true
}
