// The viewer's state hooks: opening the source's feed, the recording beside it, the rows the view
// asks for, and keeping the list's position (follow, panel switch, jump, older rows prepended).
import { useEffect, useLayoutEffect, useMemo, useState } from 'preact/hooks'
import { EventFeed } from './event-feed.js'
import { BundleFeed } from './bundle-feed.js'
import type { Feed } from './feed.js'
import { ApiRecordingSource } from './recording-source.js'
import type { RecordingSource } from './model/recording.js'
import {
  deriveAgent,
  derive,
  panelRows,
  rowIndexAtSeq,
  typeOptions,
  waterfall,
  type Envelope,
  type AgentRow,
  type Row,
  type ViewState,
} from './model.js'
import { ROW_HEIGHT } from './rows.js'

/** Where the viewer's events come from: the daemon (with a token) or a debug bundle file. */
export type Source =
  { kind: 'live'; token: string; browserHint?: string } | { kind: 'bundle'; file: Blob; name: string }

/** A row the list is asked to bring into view (a new nonce scrolls again to the same row). */
export interface ScrollTarget {
  index: number
  align: 'start' | 'center' | 'end' | 'auto'
  nonce: number
}

/** The row on top before older rows were prepended: its seq and index then. */
export type Anchor = { seq: number; index: number } | undefined

const AGENT_KINDS = new Set(['step', 'action', 'setup', 'cmd'])
export function isAgentRow(r: Row): r is AgentRow {
  return AGENT_KINDS.has(r.kind)
}

async function resolveBrowserId(hint: string | undefined): Promise<string> {
  if (hint) return hint
  const res = await fetch('/healthz', { cache: 'no-store' })
  const body = (await res.json()) as { browser_id?: string }
  if (!body.browser_id) throw new Error('the daemon did not report its browser id')
  return body.browser_id
}

/**
 * The feed of the source, opened once on mount: a bundle is read whole, a daemon's history is
 * loaded (around the deep link's seq, else the latest, then live). `version` moves on every change.
 */
export function useSessionFeed(
  source: Source,
  startSeq: number,
  pendingJump: { current: number },
  setScrollTo: (s: ScrollTarget) => void,
  authFail: (e: unknown) => void,
): { feed: Feed | undefined; version: number } {
  const [feed, setFeed] = useState<Feed>()
  const [version, setVersion] = useState(0)
  useEffect(() => {
    if (source.kind === 'bundle') {
      const b = new BundleFeed(source.name)
      b.subscribe(() => setVersion(b.version))
      setFeed(b)
      void b.open(source.file).then(() => {
        if (startSeq > 0) pendingJump.current = startSeq
        else setScrollTo({ index: 0, align: 'start', nonce: Date.now() })
      })
      return
    }
    const token = source.token
    let s: EventFeed | undefined
    resolveBrowserId(source.browserHint)
      .then(id => {
        s = new EventFeed('', id, token)
        s.subscribe(() => setVersion(s!.version))
        setFeed(s)
        const start = startSeq > 0 ? s.loadAroundSeq(startSeq) : s.loadLatest()
        return start.then(() => {
          if (startSeq === 0) s!.startLive(authFail)
          setScrollTo({ index: -1, align: 'start', nonce: Date.now() })
        })
      })
      .catch(authFail)
    return () => s?.stopLive()
  }, [])
  return { feed, version }
}

/**
 * The recording: the daemon's (fetched with the token) or the bundle's frames/ (once it is read;
 * no player for a bundle without frames).
 */
export function useRecording(feed: Feed | undefined, source: Source): RecordingSource | undefined {
  const bundleLoaded = feed instanceof BundleFeed && !feed.loading
  return useMemo(() => {
    if (!feed) return undefined
    if (feed instanceof BundleFeed) return feed.recording && feed.recording.list.length > 0 ? feed.recording : undefined
    return source.kind === 'live' ? new ApiRecordingSource('', feed.browserId, source.token) : undefined
  }, [feed, bundleLoaded])
}

/** The rows of the panel on screen (filters, navigation, span, open tree rows) and what goes with them. */
export function useViewRows(events: readonly Envelope[], view: ViewState, open: ReadonlySet<string>) {
  const derived = useMemo(() => derive(events), [events])
  const nav = useMemo(() => derived.navs.find(n => n.key === view.nav), [derived, view.nav])
  // Steps and actions are derived only while the Agent panel is open (the other panels read the span).
  const onAgent = view.panel === 'agent'
  const agent = useMemo(() => (onAgent ? deriveAgent(events) : undefined), [events, onAgent])
  const span = view.from > 0 ? { from: view.from, to: view.to } : undefined
  const rows: Row[] = useMemo(
    () =>
      panelRows(
        view.panel,
        events,
        { q: view.q, type: view.type, target: view.target, nav, span, open, sel: view.sel },
        derived,
        agent,
      ),
    [view.panel, view.q, view.type, view.target, nav, view.from, view.to, open, view.sel, events, derived, agent],
  )
  const types = useMemo(() => typeOptions(view.panel, events, agent), [view.panel, events, agent])
  const scale = useMemo(() => waterfall(rows), [rows])
  const selected = onAgent
    ? rows.findIndex(r => isAgentRow(r) && r.key === view.sel)
    : view.seq > 0
      ? rows.findIndex(r => r.seq === view.seq && r.kind !== 'gap')
      : -1
  const dataRows = rows.filter(r => r.kind !== 'gap').length
  return { derived, nav, onAgent, agent, rows, types, scale, selected, dataRows }
}

/** Keeps the list where the user expects it as rows change. */
export function useListPosition(p: {
  feed: Feed | undefined
  version: number
  view: ViewState
  rows: Row[]
  eventCount: number
  follow: boolean
  onAgent: boolean
  selected: number
  pendingJump: { current: number }
  anchor: { current: Anchor }
  setScrollTo(s: ScrollTarget): void
}): void {
  const { feed, version, view, rows, follow, onAgent, selected, pendingJump, anchor, setScrollTo } = p
  // Follow: keep the newest row in view as live events arrive.
  useEffect(() => {
    if (follow && rows.length > 0) setScrollTo({ index: rows.length - 1, align: 'end', nonce: version })
  }, [version, follow, rows.length])
  // Position: a panel switch or a jump brings the selected seq into view.
  useEffect(() => {
    if (onAgent && selected >= 0) setScrollTo({ index: selected, align: 'center', nonce: Date.now() })
    else if (!onAgent && view.seq > 0 && rows.length > 0 && !follow)
      setScrollTo({ index: rowIndexAtSeq(rows, view.seq), align: 'center', nonce: Date.now() })
  }, [view.panel, view.nav])
  useEffect(() => {
    const seq = pendingJump.current
    if (seq > 0 && rows.length > 0 && !feed?.loading) {
      pendingJump.current = 0
      setScrollTo({ index: rowIndexAtSeq(rows, seq), align: 'center', nonce: Date.now() })
    }
  }, [rows, feed?.loading])
  // After older rows were prepended, shift the scroll offset by their height: what is on screen stays put, mid-scroll too.
  useLayoutEffect(() => {
    const a = anchor.current
    const el = document.getElementById(`list-${view.panel}`)
    if (!a || !el) return
    anchor.current = undefined
    const moved = rowIndexAtSeq(rows, a.seq) - a.index
    if (moved > 0) el.scrollTop += moved * ROW_HEIGHT[view.panel]
  }, [p.eventCount])
}
