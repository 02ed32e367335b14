// The viewer of one session (a daemon's or a bundle's): the feed, the view state (kept in the URL
// fragment for sharing: panel, filters, navigation, position), following/paging/jumping, and the
// layout of toolbar, tabs, list, player and detail pane.
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks'
import { Details } from './details.js'
import { AuthError, EventFeed } from './event-feed.js'
import { BundleFeed } from './bundle-feed.js'
import { exportHar, exportJsonl, isoMicros, saveBlob } from './exports.js'
import type { Feed } from './feed.js'
import { Player } from './player.js'
import { ApiRecordingSource } from './recording-source.js'
import type { RecordingSource } from './model/recording.js'
import { rowIndexAtTime, rowTime, type Moment } from './model/player.js'
import {
  PANEL_TITLES,
  decodeView,
  deriveAgent,
  derive,
  spanOf,
  encodeView,
  panelRows,
  rowIndexAtSeq,
  typeOptions,
  waterfall,
  type Envelope,
  type Navigation,
  type AgentRow,
  type Row,
  type ViewState,
} from './model.js'
import { ROW_HEIGHT, RowView } from './rows.js'
import { Filters, PanelTabs, Toolbar } from './toolbar.js'
import { VirtualList } from './virtual-list.js'

/** Where the viewer's events come from: the daemon (with a token) or a debug bundle file. */
export type Source =
  { kind: 'live'; token: string; browserHint?: string } | { kind: 'bundle'; file: Blob; name: string }

async function resolveBrowserId(hint: string | undefined): Promise<string> {
  if (hint) return hint
  const res = await fetch('/healthz', { cache: 'no-store' })
  const body = (await res.json()) as { browser_id?: string }
  if (!body.browser_id) throw new Error('the daemon did not report its browser id')
  return body.browser_id
}

export function Viewer({
  source,
  onOpenBundle,
  onAuthError,
}: {
  source: Source
  onOpenBundle(file: Blob, name: string): void
  onAuthError(msg: string): void
}) {
  const [feed, setFeed] = useState<Feed>()
  const [fatal, setFatal] = useState('')
  const [view, setView] = useState<ViewState>(() => decodeView(location.hash))
  const [version, setVersion] = useState(0)
  const [follow, setFollow] = useState(view.seq === 0 && source.kind === 'live')
  const [bundleBusy, setBundleBusy] = useState<'' | 'bundle' | 'trace.zip'>('')
  const [bundleError, setBundleError] = useState('')
  const [scrollTo, setScrollTo] = useState<{
    index: number
    align: 'start' | 'center' | 'end' | 'auto'
    nonce: number
  }>()
  const [jumpError, setJumpError] = useState('')
  /** A row picked in a list: the player shows that moment. */
  const [seek, setSeek] = useState<Moment & { nonce: number }>()
  /** A jump's seq, scrolled to once the rows of the (possibly reloaded) window exist. */
  const pendingJump = useRef(0)
  /** The row on top before older rows were prepended: its seq and index then. */
  const anchor = useRef<{ seq: number; index: number } | undefined>(undefined)
  /** The Agent panel's rows the user opened (steps, actions, the Setup group). */
  const [open, setOpen] = useState<ReadonlySet<string>>(() => new Set())

  const authFail = (e: unknown) => {
    if (e instanceof AuthError) onAuthError(`The daemon refused the token (${e.message}).`)
    else setFatal((e as Error).message)
  }

  useEffect(() => {
    if (source.kind === 'bundle') {
      const b = new BundleFeed(source.name)
      b.subscribe(() => setVersion(b.version))
      setFeed(b)
      void b.open(source.file).then(() => {
        if (view.seq > 0) pendingJump.current = view.seq
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
        const start = view.seq > 0 ? s.loadAroundSeq(view.seq) : s.loadLatest()
        return start.then(() => {
          if (view.seq === 0) s!.startLive(authFail)
          setScrollTo({ index: -1, align: 'start', nonce: Date.now() })
        })
      })
      .catch(authFail)
    return () => s?.stopLive()
  }, [])

  // Deep link: the fragment always says what is on screen.
  useEffect(() => {
    history.replaceState(null, '', `${location.pathname}${location.search}#${encodeView(view)}`)
  }, [view])

  // The recording: the daemon's (fetched with the token) or the bundle's frames/ (once it is read;
  // no player for a bundle without frames).
  const bundleLoaded = feed instanceof BundleFeed && !feed.loading
  const recording: RecordingSource | undefined = useMemo(() => {
    if (!feed) return undefined
    if (feed instanceof BundleFeed) return feed.recording && feed.recording.list.length > 0 ? feed.recording : undefined
    return source.kind === 'live' ? new ApiRecordingSource('', feed.browserId, source.token) : undefined
  }, [feed, bundleLoaded])
  // Recording frames the player holds: the Filmstrip names them beside its screenshots.
  const [recordingFrames, setRecordingFrames] = useState(0)
  const events: readonly Envelope[] = feed?.events ?? []
  const derived = useMemo(() => derive(events), [events])
  const nav: Navigation | undefined = useMemo(() => derived.navs.find(n => n.key === view.nav), [derived, view.nav])
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
  }, [events.length])

  if (fatal)
    return (
      <main class="login">
        <h1>Session viewer</h1>
        <p role="alert" class="err">
          {fatal}
        </p>
      </main>
    )
  if (!feed)
    return (
      <main class="login">
        <p>Connecting…</p>
      </main>
    )

  const update = (patch: Partial<ViewState>) => setView(v => ({ ...v, ...patch }))
  const toggle = (key: string) => {
    const at = rows.findIndex(r => isAgentRow(r) && r.key === key)
    const row = rows[at] as AgentRow | undefined
    if (!row) return
    const next = new Set(open)
    if (row.open) {
      next.delete(key)
      // Closing a row that holds the selection moves the selection to it (a selected row keeps its
      // ancestors open).
      for (let i = at + 1; i < rows.length && (rows[i] as AgentRow).depth > row.depth; i++)
        if ((rows[i] as AgentRow).key === view.sel) update({ sel: key, seq: row.seq })
    } else next.add(key)
    setOpen(next)
  }
  const onRange = (first: number, last: number) => {
    // Page older history in well before the top is reached (a page is 100 rows), so scrolling never waits at the edge.
    if (first <= 150 && feed.hasOlder && !feed.loading && !follow) {
      anchor.current = rows[first] ? { seq: rows[first]!.seq, index: first } : undefined
      feed.loadOlder().catch(authFail)
    }
    if (last >= rows.length - 150 && feed.hasNewer && !feed.loading) feed.loadNewer().catch(authFail)
  }
  const toggleFollow = () => {
    if (follow) {
      setFollow(false)
      feed.stopLive()
      return
    }
    setFollow(true)
    update({ seq: 0 })
    if (feed.hasNewer) feed.loadLatest().then(() => feed.startLive(authFail), authFail)
    else feed.startLive(authFail)
  }
  /** The debug bundle or the Playwright trace of the window the viewer holds. */
  const downloadBundle = async (route: 'bundle' | 'trace.zip') => {
    if (!(feed instanceof EventFeed)) return
    setBundleBusy(route)
    setBundleError('')
    try {
      const first = feed.events[0]
      const { blob, name } = await feed.bundle(first ? isoMicros(first.event.ts) : undefined, route)
      saveBlob(name, blob)
    } catch (err) {
      if (err instanceof AuthError) authFail(err)
      else
        setBundleError(
          `The ${route === 'bundle' ? 'bundle' : 'trace'} could not be downloaded: ${(err as Error).message}`,
        )
    } finally {
      setBundleBusy('')
    }
  }
  const downloadPerfTrace = async (traceId: string) => {
    setBundleError('')
    try {
      const blob = await feed.perfTrace(traceId)
      if (blob) saveBlob(`perf-trace-${traceId}.json.gz`, blob)
      else setBundleError(`Performance trace ${traceId} is no longer kept (the oldest traces are removed first).`)
    } catch (err) {
      if (err instanceof AuthError) authFail(err)
      else setBundleError(`The performance trace could not be downloaded: ${(err as Error).message}`)
    }
  }
  const doJump = async (typed: string) => {
    const text = typed.trim()
    if (!text) return
    setJumpError('')
    setFollow(false)
    feed.stopLive()
    if (/^\d+$/.test(text)) {
      const seq = Number(text)
      if (!(seq >= feed.firstSeq && seq <= feed.lastSeq)) await feed.loadAroundSeq(seq).catch(authFail)
      pendingJump.current = seq
      update({ seq })
      setScrollTo({ index: rowIndexAtSeq(rows, seq), align: 'center', nonce: Date.now() })
    } else {
      const ms = Date.parse(/^\d{2}:\d{2}/.test(text) ? `${new Date().toISOString().slice(0, 10)}T${text}Z` : text)
      if (Number.isNaN(ms)) {
        setJumpError(`Cannot read ${JSON.stringify(text)}: give a seq, an RFC-3339 time or HH:MM:SS (UTC).`)
        return
      }
      const seq = await feed.loadAroundTime(new Date(ms).toISOString()).catch((err: unknown) => {
        authFail(err)
        return 0
      })
      pendingJump.current = seq
      update({ seq })
    }
  }
  const selectRow = (i: number) => {
    const r = rows[i]
    if (!r) return
    if (follow) {
      setFollow(false)
      feed.stopLive()
    }
    if (isAgentRow(r)) {
      // A step or an action: the player goes to its start, the other panels to its time span.
      const s = spanOf(r)
      update({ sel: r.key, seq: r.seq, ...(s ? { from: s.from, to: s.to } : {}) })
      setSeek(r.kind === 'cmd' ? { tUs: r.ts, seq: r.seq, nonce: Date.now() } : { tUs: r.ts, nonce: Date.now() })
      return
    }
    update({ seq: r.seq })
    // The player shows the screen just before this event.
    const tUs = rowTime(r)
    if (tUs !== undefined) setSeek({ tUs, seq: r.seq, nonce: Date.now() })
  }
  /** Playing or scrubbing the recording: the list moves to the last row at or before that moment. */
  const onMoment = (at: Moment) => {
    if (onAgent) {
      // The tree is not in time order: bring the latest row started by then into view, select nothing.
      let best = -1
      rows.forEach((r, i) => {
        if (isAgentRow(r) && r.kind !== 'setup' && r.ts <= at.tUs && (best < 0 || r.ts >= (rows[best] as AgentRow).ts))
          best = i
      })
      if (best >= 0) setScrollTo({ index: best, align: 'center', nonce: Date.now() })
      return
    }
    const i = rowIndexAtTime(rows, at.tUs)
    if (follow) {
      setFollow(false)
      feed.stopLive()
    }
    if (i < 0 || rows[i]!.seq === view.seq) return
    update({ seq: rows[i]!.seq })
    setScrollTo({ index: i, align: 'center', nonce: Date.now() })
  }

  return (
    <div class="app">
      <Toolbar
        feed={feed}
        follow={follow}
        onToggleFollow={toggleFollow}
        onJump={text => void doJump(text)}
        onExportHar={() => exportHar(feed, events, nav)}
        onExportJsonl={() => exportJsonl(feed, events, nav)}
        bundleBusy={bundleBusy}
        onDownloadBundle={() => void downloadBundle('bundle')}
        onDownloadTrace={() => void downloadBundle('trace.zip')}
        onOpenBundle={onOpenBundle}
      />
      <Filters view={view} types={types} derived={derived} feed={feed} onChange={update} />

      <main class="content">
        <PanelTabs panel={view.panel} onPick={p => update({ panel: p, type: '' })} />

        {feed.error || jumpError || bundleError ? (
          <p role="alert" class="err banner" id="error-banner">
            {jumpError || bundleError || feed.error}
          </p>
        ) : null}
        {feed instanceof BundleFeed && feed.warnings.length > 0 ? (
          <ul class="warnings" id="bundle-warnings" aria-label="About this bundle">
            {feed.warnings.map(w => (
              <li key={w}>{w}</li>
            ))}
          </ul>
        ) : null}

        <div class="main" id="panel" role="tabpanel" aria-labelledby={`tab-${view.panel}`}>
          <section class="list">
            <div class="list-head">
              <span id="row-count" data-count={dataRows}>
                {onAgent && agent
                  ? `${agent.steps.length} step${agent.steps.length === 1 ? '' : 's'} · ${agent.actions.length} action${agent.actions.length === 1 ? '' : 's'}`
                  : `${dataRows} ${
                      (view.panel === 'timeline'
                        ? 'navigation'
                        : view.panel === 'filmstrip'
                          ? 'screenshot'
                          : view.panel === 'network'
                            ? 'request'
                            : 'event') + (dataRows === 1 ? '' : 's')
                    }${
                      view.panel === 'filmstrip' && recording && recordingFrames > 0
                        ? ` · ${recordingFrames} recording frame${recordingFrames === 1 ? '' : 's'} in the player`
                        : ''
                    }`}
              </span>
              {feed.hasOlder ? (
                <button
                  type="button"
                  id="load-older"
                  onClick={() => {
                    anchor.current = rows[0] ? { seq: rows[0].seq, index: 0 } : undefined
                    feed.loadOlder().catch(authFail)
                  }}
                >
                  Load 5 minutes older
                </button>
              ) : null}
            </div>
            <VirtualList
              key={view.panel}
              id={`list-${view.panel}`}
              label={`${PANEL_TITLES[view.panel]} rows`}
              count={rows.length}
              rowHeight={ROW_HEIGHT[view.panel]}
              selected={selected}
              onSelect={selectRow}
              scrollTo={scrollTo}
              onRange={onRange}
              rowId={i => `row-${view.panel}-${i}`}
              rowClass={i => `kind-${rows[i]!.kind}`}
              renderRow={i => <RowView row={rows[i]!} scale={scale} activeNav={view.nav} onToggle={toggle} />}
              onExpand={
                onAgent
                  ? (i, want) => {
                      const r = rows[i]
                      if (r && isAgentRow(r) && r.parent && r.open !== want) toggle(r.key)
                    }
                  : undefined
              }
            />
          </section>
          <aside class="detail" aria-label="Details">
            {recording ? (
              <Player
                source={recording}
                events={events}
                live={follow}
                targetId={view.target || undefined}
                seek={seek}
                onMoment={onMoment}
                onAuthError={authFail}
                onFrameCount={setRecordingFrames}
              />
            ) : null}
            <Details
              row={selected >= 0 ? rows[selected] : undefined}
              activeNav={view.nav}
              onNav={key => update({ nav: key })}
              onPerfTrace={id => void downloadPerfTrace(id)}
            />
          </aside>
        </div>
      </main>
    </div>
  )
}

const AGENT_KINDS = new Set(['step', 'action', 'setup', 'cmd'])
function isAgentRow(r: Row): r is AgentRow {
  return AGENT_KINDS.has(r.kind)
}
