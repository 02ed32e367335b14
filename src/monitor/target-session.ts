// One attached target (a flattened CDP session): its context bookkeeping and its collectors' listeners.
// The connection routes every message carrying this sessionId to dispatch(); the monitor's own
// bookkeeping (track) runs before any collector handler of the same event.
import { capUrl } from '../bounds.js'
import type { Protocol } from 'devtools-protocol'
import type { Context, TargetType } from '../events/index.js'
import type { Logger } from '../log.js'
import { CdpSessionCore, type RawSend } from './cdp-session.js'
import type { ProtocolErrorLog } from './protocol-error.js'
import type { TargetSession } from './types.js'

/** CDP TargetInfo.type -> the spec's target_type. */
export function targetTypeOf(cdpType: string): TargetType {
  switch (cdpType) {
    case 'page': return 'page'
    case 'iframe': return 'iframe'
    case 'worker': return 'worker'
    case 'service_worker': return 'service_worker'
    case 'shared_worker': return 'shared_worker'
    case 'background_page': return 'background_page'
    default: return 'other'
  }
}

/** What monitor.targets() and the target-attached/detached events report. */
export interface TargetInfo {
  sessionId: string
  targetId: string
  targetType: TargetType
  context: Context
}

export class AttachedTarget extends CdpSessionCore implements TargetSession {
  readonly sessionId: string
  readonly targetId: string
  readonly targetType: TargetType
  readonly parentSessionId: string | undefined
  /** Set once 'target-attached' was announced, so 'target-detached' pairs with it. */
  announced = false
  /** Session ids of targets auto-attached through this one (OOPIFs, dedicated workers). */
  readonly children = new Set<string>()
  private url: string | undefined
  private frameId: string | undefined
  private loaderId: string | undefined
  private navSeq = 0
  /** Set once a frameNavigated was seen, so a late Page.getFrameTree answer cannot overwrite newer values. */
  private navigated = false

  constructor(
    raw: RawSend,
    errors: ProtocolErrorLog,
    logger: Logger,
    readonly targetInfo: Protocol.Target.TargetInfo,
    sessionId: string,
    parentSessionId: string | undefined,
  ) {
    super(raw, sessionId, errors, logger, `target ${targetInfo.targetId}`)
    this.sessionId = sessionId
    this.targetId = targetInfo.targetId
    this.targetType = targetTypeOf(targetInfo.type)
    this.parentSessionId = parentSessionId
    this.url = targetInfo.url ? capUrl(targetInfo.url) : undefined
    // A page's and an OOPIF's root frame id equals its target id.
    if (this.hasFrames) this.frameId = targetInfo.targetId
  }

  get hasFrames(): boolean { return this.targetType === 'page' || this.targetType === 'iframe' || this.targetType === 'background_page' }

  context(): Context {
    const c: Context = { session_id: this.sessionId, target_id: this.targetId, target_type: this.targetType }
    if (this.url) c.url = this.url
    if (this.frameId) c.frame_id = this.frameId
    if (this.loaderId) c.loader_id = this.loaderId
    if (this.targetType === 'page') c.nav_seq = this.navSeq
    return c
  }

  info(): TargetInfo {
    return { sessionId: this.sessionId, targetId: this.targetId, targetType: this.targetType, context: this.context() }
  }

  /** The monitor's own bookkeeping runs before any collector handler of the same event. */
  override dispatch(method: string, params: unknown): void {
    this.track(method, params)
    super.dispatch(method, params)
  }

  /** Seeds url/frame/loader from Page.getFrameTree when no navigation has been seen yet. */
  seedFrame(frame: Protocol.Page.Frame): void {
    if (this.navigated) return
    this.applyFrame(frame)
  }

  /** The target info as of now (for re-creating this target's state on the same session). */
  currentInfo(): Protocol.Target.TargetInfo {
    return { ...this.targetInfo, url: this.url ?? this.targetInfo.url }
  }

  /** Keeps the url of frameless targets (workers) current from Target.targetInfoChanged. */
  updateInfo(info: Protocol.Target.TargetInfo): void {
    if (!this.hasFrames && info.url) this.url = capUrl(info.url)
  }

  private isRootFrame(frame: Protocol.Page.Frame): boolean {
    return !frame.parentId || frame.id === this.targetId
  }

  private applyFrame(frame: Protocol.Page.Frame): void {
    this.frameId = frame.id
    this.loaderId = frame.loaderId || undefined
    // An uncommitted initial document reports url ""; keep the target's pending URL then.
    this.url = capUrl((frame.url ?? '') + (frame.urlFragment ?? '')) || this.url
  }

  private track(method: string, params: unknown): void {
    if (method === 'Page.frameNavigated') {
      const { frame } = params as Protocol.Page.FrameNavigatedEvent
      if (!this.isRootFrame(frame)) return
      this.navigated = true
      this.applyFrame(frame)
      // Only a top-level navigation of a page starts a new epoch; sub-frames never touch nav_seq.
      if (this.targetType === 'page' && !frame.parentId) this.navSeq++
    } else if (method === 'Page.navigatedWithinDocument') {
      const p = params as Protocol.Page.NavigatedWithinDocumentEvent
      if (p.frameId === this.frameId && p.url) this.url = capUrl(p.url)
    }
  }
}
