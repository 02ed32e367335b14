// One attached target (a flattened CDP session): its context bookkeeping and its collectors' listeners.
// The connection routes every message carrying this sessionId to dispatch(); the monitor's own
// bookkeeping (track) runs before any collector handler of the same event.
import type { Bounds } from '../pipeline/bounds.js'
import type { Protocol } from 'devtools-protocol'
import type { Context, TargetType } from '../events/index.js'
import type { Logger } from '../log.js'
import { CdpSessionCore, type RawSend } from './cdp-session.js'
import type { ListenedEvents } from './handlers.js'
import type { ProtocolErrorLog } from './protocol-error.js'
import { FRAME_TYPES, targetTypeOf, type TargetInfo } from './target-types.js'
import type { TargetSession } from './types.js'

/** Events held per target until its frame tree was read (see AttachedTarget.held). */
const HELD_MAX = 1000

export class AttachedTarget extends CdpSessionCore implements TargetSession {
  readonly sessionId: string
  readonly targetId: string
  readonly targetType: TargetType
  readonly parentSessionId: string | undefined
  /** Set once 'target-attached' was announced, so 'target-detached' pairs with it. */
  announced = false
  /** Session ids of targets auto-attached through this one (OOPIFs, dedicated workers). */
  readonly children = new Set<string>()
  /** The target this one was auto-attached through (the page owning an OOPIF, a worker's parent). */
  parent: AttachedTarget | undefined
  private url: string | undefined
  private frameId: string | undefined
  private loaderId: string | undefined
  private navSeq = 0
  /** Set once a frameNavigated was seen, so a late Page.getFrameTree answer cannot overwrite newer values. */
  private navigated = false
  /** Loader of the root frame's document last announced (by Chromium or from the frame tree at attach). */
  private rootLoaderId: string | undefined
  /** DOMContentLoaded / load of the root document already dispatched (each once per document). */
  private domContentSeen = false
  private loadSeen = false
  /** Page.setLifecycleEventsEnabled is on to replay DCL/load of a document adopted from the frame tree. */
  private replayingLifecycle = false
  /**
   * Events that arrive before the frame tree was read are held until then (console output,
   * DOMContentLoaded, load, ...): their document may be one that committed unseen, whose navigation
   * the tree is about to announce. Network events pass (a document's request precedes its commit).
   */
  private held: { method: string; params: unknown }[] | undefined
  /** See TargetSession.contextPending; settled together with `held`. */
  contextPending: Promise<void> | undefined
  private contextKnown: () => void = () => undefined

  constructor(
    raw: RawSend,
    errors: ProtocolErrorLog,
    logger: Logger,
    /** Cuts URLs of the context to their bound. */
    private readonly bounds: Bounds,
    readonly targetInfo: Protocol.Target.TargetInfo,
    sessionId: string,
    parentSessionId: string | undefined,
    listened?: ListenedEvents,
  ) {
    super(raw, sessionId, errors, logger, `target ${targetInfo.targetId}`, listened)
    this.sessionId = sessionId
    this.targetId = targetInfo.targetId
    this.targetType = targetTypeOf(targetInfo.type)
    this.parentSessionId = parentSessionId
    this.url = targetInfo.url ? this.bounds.capUrl(targetInfo.url) : undefined
    // A page's and an OOPIF's root frame id equals its target id.
    if (this.hasFrames) {
      this.frameId = targetInfo.targetId
      this.held = []
      this.contextPending = new Promise(resolve => {
        this.contextKnown = resolve
      })
    }
  }

  get hasFrames(): boolean {
    return FRAME_TYPES.has(this.targetType)
  }

  context(): Context {
    const c: Context = { session_id: this.sessionId, target_id: this.targetId, target_type: this.targetType }
    if (this.url) c.url = this.url
    if (this.frameId) c.frame_id = this.frameId
    if (this.loaderId) c.loader_id = this.loaderId
    const navSeq = this.navSeqNow()
    if (navSeq !== undefined) c.nav_seq = navSeq
    return c
  }

  /**
   * A page counts its own top-level navigations. An OOPIF and a dedicated worker take their
   * parent's at the moment of the event (recursively: a worker of an OOPIF gets the page's), so
   * their output joins the navigation of the page that owns them. Shared and service workers
   * outlive and serve several pages: absent (never 0), as is a parent without one.
   */
  private navSeqNow(): number | undefined {
    if (this.targetType === 'page') return this.navSeq
    if (this.targetType === 'iframe' || this.targetType === 'worker') return this.parent?.navSeqNow()
    return undefined
  }

  info(): TargetInfo {
    return { sessionId: this.sessionId, targetId: this.targetId, targetType: this.targetType, context: this.context() }
  }

  /** The monitor's own bookkeeping runs before any collector handler of the same event. */
  override dispatch(method: string, params: unknown): void {
    if (this.held) {
      // A commit seen by Chromium's own event: what was held belongs to the document before it.
      if (method === 'Page.frameNavigated' && this.isRootFrame((params as Protocol.Page.FrameNavigatedEvent).frame))
        this.releaseHeld()
      else if (!method.startsWith('Network.')) {
        this.held.push({ method, params })
        // Bounded: a page flooding before its setup ends is let through in order.
        if (this.held.length >= HELD_MAX) this.releaseHeld()
        return
      }
    }
    if (!this.track(method, params)) return
    super.dispatch(method, params)
  }

  /**
   * The root frame as Page.getFrameTree reports it right after Page.enable. A document that
   * committed before Page.enable took effect (a tab created with a URL commits while it is still
   * paused; a tab that existed before we attached) never gets a frameNavigated on this session, so
   * it is announced here as one, with its real loader id: bookkeeping (nav_seq) and collectors
   * (page_navigation) see it like any other. Nothing to announce when a navigation was already seen
   * (the tree is older) or the frame shows no committed document (the initial empty one).
   * Releases the held events either way.
   */
  adoptFrameTree(frame: Protocol.Page.Frame): void {
    if (this.navigated) {
      this.releaseHeld()
      return
    }
    if (!frame.loaderId || !frame.url || frame.url === 'about:blank') {
      this.applyFrame(frame)
      this.releaseHeld()
      return
    }
    const held = this.held
    this.held = undefined
    this.dispatch('Page.frameNavigated', { frame, type: 'Navigation' } satisfies Protocol.Page.FrameNavigatedEvent)
    for (const e of held ?? []) this.dispatch(e.method, e.params)
    this.settleContext()
    // Its DOMContentLoaded and load may have fired before Page.enable took effect too (a tab whose
    // first document loads in a new renderer process is not held by the pause). Lifecycle events,
    // once enabled, replay the stages the document already reached, with their real timestamps.
    this.replayingLifecycle = true
    void this.sendMayFail('Page.setLifecycleEventsEnabled', { enabled: true })
  }

  /** Dispatches what was held before the frame tree was read (at the latest once it was read or could not be). */
  releaseHeld(): void {
    const held = this.held
    this.held = undefined
    for (const e of held ?? []) this.dispatch(e.method, e.params)
    this.settleContext()
  }

  private settleContext(): void {
    this.contextPending = undefined
    this.contextKnown()
  }

  /** The target info as of now (for re-creating this target's state on the same session). */
  currentInfo(): Protocol.Target.TargetInfo {
    return { ...this.targetInfo, url: this.url ?? this.targetInfo.url }
  }

  /** Keeps the url of frameless targets (workers) current from Target.targetInfoChanged. */
  updateInfo(info: Protocol.Target.TargetInfo): void {
    if (!this.hasFrames && info.url) this.url = this.bounds.capUrl(info.url)
  }

  private isRootFrame(frame: Protocol.Page.Frame): boolean {
    return !frame.parentId || frame.id === this.targetId
  }

  private applyFrame(frame: Protocol.Page.Frame): void {
    this.frameId = frame.id
    this.loaderId = frame.loaderId || undefined
    // An uncommitted initial document reports url ""; keep the target's pending URL then.
    this.url = this.bounds.capUrl((frame.url ?? '') + (frame.urlFragment ?? '')) || this.url
  }

  /** Context bookkeeping for one event; false when the event repeats one already announced (not dispatched). */
  private track(method: string, params: unknown): boolean {
    if (method === 'Page.frameNavigated') {
      const { frame } = params as Protocol.Page.FrameNavigatedEvent
      if (!this.isRootFrame(frame)) return true
      // Announced from the frame tree at attach already (Chromium's own event raced Page.getFrameTree).
      if (frame.loaderId && frame.loaderId === this.rootLoaderId) return false
      this.rootLoaderId = frame.loaderId
      this.domContentSeen = false
      this.loadSeen = false
      this.navigated = true
      this.applyFrame(frame)
      // Only a top-level navigation of a page starts a new epoch; sub-frames never touch nav_seq.
      if (this.targetType === 'page' && !frame.parentId) this.navSeq++
    } else if (method === 'Page.navigatedWithinDocument') {
      const p = params as Protocol.Page.NavigatedWithinDocumentEvent
      if (p.frameId === this.frameId && p.url) this.url = this.bounds.capUrl(p.url)
    } else if (method === 'Page.domContentEventFired') {
      if (this.domContentSeen) return false
      this.domContentSeen = true
    } else if (method === 'Page.loadEventFired') {
      if (this.loadSeen) return false
      this.loadSeen = true
      this.stopLifecycleReplay()
    } else if (method === 'Page.lifecycleEvent' && this.replayingLifecycle) {
      const p = params as Protocol.Page.LifecycleEventEvent
      if (p.frameId !== this.frameId || p.loaderId !== this.rootLoaderId) return true
      // Stand-ins for the Page events of the adopted document (deduplicated against the real ones).
      if (p.name === 'DOMContentLoaded' && !this.domContentSeen)
        this.dispatch('Page.domContentEventFired', { timestamp: p.timestamp })
      else if (p.name === 'load' && !this.loadSeen) this.dispatch('Page.loadEventFired', { timestamp: p.timestamp })
    }
    return true
  }

  /** The adopted document reached load: lifecycle events are not needed any more. */
  private stopLifecycleReplay(): void {
    if (!this.replayingLifecycle) return
    this.replayingLifecycle = false
    if (!this.closed) void this.sendMayFail('Page.setLifecycleEventsEnabled', { enabled: false })
  }
}
