// Page collector: page_navigation, page_dom_content_loaded, page_load, page_layout_shift, page_lcp,
// dialogs and downloads per frame-bearing session (page, iframe), page_tab_opened and page_crashed at
// browser level, and the computed page_layout_settled / page_navigation_settled for page targets.
// Dialogs and downloads are only observed: nothing here answers a dialog or changes where a
// download goes (the events come from the Page domain the capture plan enables anyway).
import type { Protocol } from 'devtools-protocol'
import {
  Bounds,
  cutUtf8,
  Disposer,
  DOCUMENT_TYPES,
  maskValue,
  systemClock,
  type BrowserScope,
  type Clock,
  type Collector,
  type Detach,
  type Emit,
  type EventData,
  type TargetSession,
  type CaptureNeeds,
} from '../src/collector-kit.js'
import { NavigationSettleRule, LAYOUT_STABLE_MS } from './page-settle.js'

export interface PageCollectorOptions {
  /** page_layout_settled stable period (default 1 s). */
  layoutStableMs?: number
  /** The settle timer's clock (injectable for tests). */
  clock?: Clock
  /** URL bound and its cut counter (default: the collector's own, at the default bounds). */
  bounds?: Bounds
}

/** A dialog's message is page text of any length: kept up to this many bytes. */
export const DIALOG_MESSAGE_MAX_BYTES = 4096
/** Downloads followed at once per target (a page cannot grow the table past it). */
const MAX_DOWNLOADS = 256
/** Crashed targets whose context waits for the browser's crash report (status, code). */
const MAX_CRASHED = 64

/** Navigations, loads and layout shifts of documents (pages and OOPIFs; Page is the monitor's own). */
export const PAGE_CAPTURE: CaptureNeeds = {
  category: 'page',
  targets: ['page', 'iframe'],
  domains: ['PerformanceTimeline'],
}

export function createPageCollector(opts: PageCollectorOptions = {}): Collector {
  const timers = opts.clock ?? systemClock
  const bounds = opts.bounds ?? new Bounds()
  // The session hears of a crash first (Inspector.targetCrashed, context still known), the browser
  // right after (Target.targetCrashed, with status and code): page_crashed joins the two.
  const crashed = new Map<string, EventData<'page_crashed'>>()
  return {
    name: 'page',
    capture: PAGE_CAPTURE,
    attach(session: TargetSession, emit: Emit): Detach {
      // Workers have no Page domain; only pages and out-of-process iframes render frames.
      if (!DOCUMENT_TYPES.has(session.targetType)) return () => {}
      return attachDocument({ session, emit, bounds, crashed, downloads: new Set<string>(), live: true }, timers, opts)
    },
    attachBrowser: (browser: BrowserScope, emit: Emit) => attachTabs(browser, emit, bounds, crashed),
  }
}

/** What the handlers of one document session share. */
interface PageState {
  readonly session: TargetSession
  readonly emit: Emit
  readonly bounds: Bounds
  /** Crashed targets' context, until the browser's crash report joins it (shared by all sessions). */
  readonly crashed: Map<string, EventData<'page_crashed'>>
  /** Downloads begun and not yet finished. */
  readonly downloads: Set<string>
  /** False once detached. */
  live: boolean
  settle?: NavigationSettleRule
}

function attachDocument(s: PageState, timers: Clock, opts: PageCollectorOptions): Detach {
  const { session, emit } = s
  const live = () => s.live && !session.signal.aborted
  const emitSettled = (type: 'page_layout_settled' | 'page_navigation_settled', navSeq: number) => {
    const ctx = session.context()
    if (live() && (ctx.nav_seq ?? 0) === navSeq) emit({ type, data: ctx, source: { kind: 'cdp' } })
  }
  // Settling is a property of the whole page, so only page targets compute it.
  const settle =
    session.targetType === 'page'
      ? new NavigationSettleRule(
          {
            timers,
            stableMs: opts.layoutStableMs ?? LAYOUT_STABLE_MS,
            onLayoutSettled: n => emitSettled('page_layout_settled', n),
            onNavigationSettled: n => emitSettled('page_navigation_settled', n),
          },
          session.context().nav_seq ?? 0,
        )
      : undefined
  if (settle) s.settle = settle
  const bag = new Disposer()
  bag.add(() => {
    s.live = false
    s.downloads.clear()
  })
  if (settle) bag.add(() => settle.dispose())
  bag.add(
    session.on('Inspector.targetCrashed', () => {
      if (s.crashed.size >= MAX_CRASHED) s.crashed.delete(s.crashed.keys().next().value!)
      s.crashed.set(session.targetId, session.context())
    }),
  )
  bag.add(session.on('Page.javascriptDialogOpening', p => onDialogOpening(s, p)))
  bag.add(session.on('Page.javascriptDialogClosed', p => onDialogClosed(s, p)))
  bag.add(session.on('Page.downloadWillBegin', p => onDownloadBegin(s, p)))
  bag.add(session.on('Page.downloadProgress', p => onDownloadProgress(s, p)))
  bag.add(session.on('Page.frameNavigated', p => onNavigated(s, p)))
  bag.add(session.on('Page.domContentEventFired', p => onDomContent(s, p)))
  bag.add(session.on('Page.loadEventFired', p => onLoad(s, p)))
  bag.add(session.on('PerformanceTimeline.timelineEventAdded', p => onTimeline(s, p)))
  return () => bag.dispose()
}

// Navigation and load milestones (they also drive the settle rule).

function onNavigated(s: PageState, p: Protocol.Page.FrameNavigatedEvent): void {
  const { nav_seq, url: _url, frame_id: _f, loader_id: _l, ...ids } = s.session.context()
  const f = p.frame
  // page_navigation describes the navigated frame, not the page; it carries no nav_seq.
  const data: EventData<'page_navigation'> = {
    ...ids,
    url: s.bounds.capUrl(f.url + (f.urlFragment ?? '')),
    frame_id: f.id,
    loader_id: f.loaderId,
  }
  if (f.parentId) data.parent_frame_id = f.parentId
  s.emit({ type: 'page_navigation', data, source: { kind: 'cdp', event: 'Page.frameNavigated' } })
  if (!f.parentId) s.settle?.navigate(nav_seq ?? 0)
}

function onDomContent(s: PageState, p: Protocol.Page.DomContentEventFiredEvent): void {
  const ctx = s.session.context()
  const navSeq = ctx.nav_seq ?? 0 // read first: ctx becomes the event's data
  s.emit({
    type: 'page_dom_content_loaded',
    data: Object.assign(ctx, { cdp_timestamp: p.timestamp }),
    source: { kind: 'cdp', event: 'Page.domContentEventFired' },
  })
  s.settle?.onDomContentLoaded(navSeq)
}

function onLoad(s: PageState, p: Protocol.Page.LoadEventFiredEvent): void {
  const ctx = s.session.context()
  const navSeq = ctx.nav_seq ?? 0
  s.emit({
    type: 'page_load',
    data: Object.assign(ctx, { cdp_timestamp: p.timestamp }),
    source: { kind: 'cdp', event: 'Page.loadEventFired' },
  })
  s.settle?.onLoad(navSeq)
}

/** Layout shifts and LCP from the performance timeline. */
function onTimeline(s: PageState, { event: ev }: Protocol.PerformanceTimeline.TimelineEventAddedEvent): void {
  const ctx = s.session.context()
  const navSeq = ctx.nav_seq ?? 0
  const source = { kind: 'cdp' as const, event: 'PerformanceTimeline.timelineEventAdded' }
  // CDP times are seconds since the epoch; the event fields are milliseconds.
  if (ev.type === 'layout-shift' && ev.layoutShiftDetails) {
    const data: EventData<'page_layout_shift'> = Object.assign(ctx, {
      time: ev.time * 1000,
      duration: (ev.duration ?? 0) * 1000,
      layout_shift_details: {
        value: ev.layoutShiftDetails.value,
        had_recent_input: ev.layoutShiftDetails.hadRecentInput,
      },
    })
    if (ev.frameId) data.source_frame_id = ev.frameId
    s.emit({ type: 'page_layout_shift', data, source })
    s.settle?.onLayoutShift(navSeq)
  } else if (ev.type === 'largest-contentful-paint' && ev.lcpDetails) {
    const l = ev.lcpDetails
    const lcp: EventData<'page_lcp'>['lcp_details'] = {
      render_time: l.renderTime * 1000,
      load_time: l.loadTime * 1000,
      size: l.size,
    }
    if (l.elementId) lcp.element_id = l.elementId
    if (l.url) lcp.url = s.bounds.capUrl(l.url)
    if (l.nodeId !== undefined) lcp.node_id = l.nodeId
    const data: EventData<'page_lcp'> = Object.assign(ctx, { time: ev.time * 1000, lcp_details: lcp })
    if (ev.frameId) data.source_frame_id = ev.frameId
    s.emit({ type: 'page_lcp', data, source })
  }
}

// Dialogs and downloads: observed only.

function onDialogOpening(s: PageState, p: Protocol.Page.JavascriptDialogOpeningEvent): void {
  const data: EventData<'page_dialog_opened'> = Object.assign(s.session.context(), {
    dialog_type: p.type,
    message: cutUtf8(p.message, DIALOG_MESSAGE_MAX_BYTES),
    has_browser_handler: p.hasBrowserHandler,
  })
  if (p.url) data.url = s.bounds.capUrl(p.url)
  s.emit({ type: 'page_dialog_opened', data, source: { kind: 'cdp', event: 'Page.javascriptDialogOpening' } })
}

function onDialogClosed(s: PageState, p: Protocol.Page.JavascriptDialogClosedEvent): void {
  const data: EventData<'page_dialog_closed'> = Object.assign(s.session.context(), { result: p.result })
  if (p.userInput) data.user_input = maskValue(p.userInput)
  s.emit({ type: 'page_dialog_closed', data, source: { kind: 'cdp', event: 'Page.javascriptDialogClosed' } })
}

function onDownloadBegin(s: PageState, p: Protocol.Page.DownloadWillBeginEvent): void {
  if (s.downloads.size >= MAX_DOWNLOADS) s.downloads.delete(s.downloads.values().next().value!)
  s.downloads.add(p.guid)
  const data: EventData<'page_download_started'> = Object.assign(s.session.context(), {
    guid: p.guid,
    suggested_filename: p.suggestedFilename,
  })
  data.url = s.bounds.capUrl(p.url)
  s.emit({ type: 'page_download_started', data, source: { kind: 'cdp', event: 'Page.downloadWillBegin' } })
}

function onDownloadProgress(s: PageState, p: Protocol.Page.DownloadProgressEvent): void {
  if (p.state === 'inProgress' || !s.downloads.delete(p.guid)) return
  s.emit({
    type: 'page_download_finished',
    data: Object.assign(s.session.context(), { guid: p.guid, state: p.state, total_bytes: p.receivedBytes }),
    source: { kind: 'cdp', event: 'Page.downloadProgress' },
  })
}

/** Browser level: page_tab_opened for tabs opened from now on, page_crashed joining the crash report. */
async function attachTabs(
  browser: BrowserScope,
  emit: Emit,
  bounds: Bounds,
  crashed: Map<string, EventData<'page_crashed'>>,
): Promise<Detach> {
  // Tabs that already existed when we connected were not "opened" now: Target.getTargets lists
  // them, and their replayed targetCreated events (from setDiscoverTargets) are skipped.
  const existing = new Set<string>()
  const reported = new Set<string>()
  let buffered: Protocol.Target.TargetInfo[] | undefined = []
  const report = (t: Protocol.Target.TargetInfo) => {
    if (t.type !== 'page' || existing.has(t.targetId) || reported.has(t.targetId)) return
    reported.add(t.targetId)
    const data: EventData<'page_tab_opened'> = { target_id: t.targetId, target_type: 'page' }
    if (t.url) data.url = bounds.capUrl(t.url)
    if (t.title) data.title = t.title
    if (t.openerId) data.opener_id = t.openerId
    emit({ type: 'page_tab_opened', data, source: { kind: 'cdp', event: 'Target.targetCreated' } })
  }
  const bag = new Disposer()
  bag.add(() => {
    existing.clear()
    reported.clear()
    crashed.clear()
  })
  bag.add(
    browser.on('Target.targetCrashed', ({ targetId, status, errorCode }) => {
      const data = crashed.get(targetId)
      if (!data) return // not a page or frame this collector watched
      crashed.delete(targetId)
      data.status = status
      data.error_code = errorCode
      emit({ type: 'page_crashed', data, source: { kind: 'cdp', event: 'Target.targetCrashed' } })
    }),
  )
  bag.add(
    browser.on('Target.targetCreated', ({ targetInfo }) => {
      if (buffered) buffered.push(targetInfo)
      else report(targetInfo)
    }),
  )
  // Both sets stay bounded by the number of live targets.
  bag.add(
    browser.on('Target.targetDestroyed', ({ targetId }) => {
      existing.delete(targetId)
      reported.delete(targetId)
    }),
  )
  // Best effort: without the list every page counts as new.
  const listed = await browser.sendMayFail('Target.getTargets')
  for (const t of listed?.targetInfos ?? []) existing.add(t.targetId)
  const early = buffered
  buffered = undefined
  for (const t of early) report(t)
  return () => bag.dispose()
}
