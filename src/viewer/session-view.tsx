// The viewer of one session (a daemon's or a bundle's): the view state (kept in the URL fragment
// for sharing: panel, filters, navigation, position) and the layout of toolbar, tabs, list, player
// and detail pane. The feed, rows and list position come from session-state.ts; what the user does
// goes through session-actions.ts.
import { useEffect, useRef, useState } from 'preact/hooks'
import { Details } from './details.js'
import { AuthError } from './event-feed.js'
import { BundleFeed } from './bundle-feed.js'
import { exportHar, exportJsonl } from './exports.js'
import type { Feed } from './feed.js'
import { Player } from './player.js'
import type { Moment } from './model/player.js'
import type { RecordingSource } from './model/recording.js'
import { PANEL_TITLES, decodeView, encodeView, type AgentData, type NetRow, type ViewState } from './model.js'
import { ROW_HEIGHT, RowView } from './rows.js'
import {
  downloadBundle,
  downloadPerfTrace,
  followMoment,
  jump,
  loadOlder,
  pageNear,
  selectRow,
  toggleFollow,
  toggleOpen,
  type BundleRoute,
  type ViewerCtx,
} from './session-actions.js'
import {
  isAgentRow,
  useListPosition,
  useRecording,
  useSessionFeed,
  useViewRows,
  type Anchor,
  type ScrollTarget,
  type Source,
} from './session-state.js'
import { Filters, PanelTabs, Toolbar } from './toolbar.js'
import { VirtualList } from './virtual-list.js'

export type { Source } from './session-state.js'

export function Viewer({
  source,
  onOpenBundle,
  onAuthError,
}: {
  source: Source
  onOpenBundle(file: Blob, name: string): void
  onAuthError(msg: string): void
}) {
  const [fatal, setFatal] = useState('')
  const [view, setView] = useState<ViewState>(() => decodeView(location.hash))
  const [follow, setFollow] = useState(view.seq === 0 && source.kind === 'live')
  const [bundleBusy, setBundleBusy] = useState<'' | BundleRoute>('')
  const [bundleError, setBundleError] = useState('')
  const [scrollTo, setScrollTo] = useState<ScrollTarget>()
  const [jumpError, setJumpError] = useState('')
  /** A row picked in a list: the player shows that moment. */
  const [seek, setSeek] = useState<Moment & { nonce: number }>()
  const pendingJump = useRef(0)
  const anchor = useRef<Anchor>(undefined)
  /** The Agent panel's rows the user opened (steps, actions, the Setup group). */
  const [open, setOpen] = useState<ReadonlySet<string>>(() => new Set())

  const authFail = (e: unknown) => {
    if (e instanceof AuthError) onAuthError(`The daemon refused the token (${e.message}).`)
    else setFatal((e as Error).message)
  }
  const { feed, version } = useSessionFeed(source, view.seq, pendingJump, setScrollTo, authFail)

  // Deep link: the fragment always says what is on screen.
  useEffect(() => {
    history.replaceState(null, '', `${location.pathname}${location.search}#${encodeView(view)}`)
  }, [view])

  const recording = useRecording(feed, source)
  // Recording frames the player holds: the Filmstrip names them beside its screenshots.
  const [recordingFrames, setRecordingFrames] = useState(0)
  const events = feed?.events ?? []
  const { derived, nav, onAgent, agent, rows, types, scale, selected, dataRows } = useViewRows(events, view, open)
  const eventCount = events.length
  useListPosition({
    feed,
    version,
    view,
    rows,
    eventCount,
    follow,
    onAgent,
    selected,
    pendingJump,
    anchor,
    setScrollTo,
  })

  if (fatal || !feed) return <NotOpen fatal={fatal} />

  const update = (patch: Partial<ViewState>) => setView(v => ({ ...v, ...patch }))
  // The actions read this render's state, as closures made here would.
  const c: ViewerCtx = {
    feed,
    rows,
    view,
    open,
    follow,
    onAgent,
    update,
    setOpen,
    setFollow,
    setScrollTo,
    setSeek,
    setJumpError,
    setBundleBusy,
    setBundleError,
    pendingJump,
    anchor,
    authFail,
  }

  return (
    <div class="app">
      <Toolbar
        feed={feed}
        follow={follow}
        onToggleFollow={() => toggleFollow(c)}
        onJump={text => void jump(c, text)}
        onExportHar={() => exportHar(feed, events, nav)}
        onExportJsonl={() => exportJsonl(feed, events, nav)}
        bundleBusy={bundleBusy}
        onDownloadBundle={() => void downloadBundle(c, 'bundle')}
        onDownloadTrace={() => void downloadBundle(c, 'trace.zip')}
        onOpenBundle={onOpenBundle}
      />
      <Filters view={view} types={types} derived={derived} feed={feed} onChange={update} />

      <main class="content">
        <PanelTabs panel={view.panel} onPick={p => update({ panel: p, type: '' })} />
        <Banners feed={feed} message={jumpError || bundleError || feed.error} />

        <div class="main" id="panel" role="tabpanel" aria-labelledby={`tab-${view.panel}`}>
          <ListPane
            c={c}
            scale={scale}
            selected={selected}
            scrollTo={scrollTo}
            dataRows={dataRows}
            count={rowCount(view.panel, onAgent ? agent : undefined, dataRows, recording ? recordingFrames : 0)}
          />
          <DetailPane c={c} recording={recording} seek={seek} selected={selected} onFrameCount={setRecordingFrames} />
        </div>
      </main>
    </div>
  )
}

/** The list of the panel on screen, under its head (the count, and paging older history in). */
function ListPane({
  c,
  scale,
  selected,
  scrollTo,
  dataRows,
  count,
}: {
  c: ViewerCtx
  scale(r: NetRow): { left: number; width: number }
  selected: number
  scrollTo: ScrollTarget | undefined
  dataRows: number
  count: string
}) {
  const { feed, rows, view, onAgent } = c
  const toggle = (key: string) => toggleOpen(c, key)
  return (
    <section class="list">
      <div class="list-head">
        <span id="row-count" data-count={dataRows}>
          {count}
        </span>
        {feed.hasOlder ? (
          <button type="button" id="load-older" onClick={() => loadOlder(c)}>
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
        onSelect={i => selectRow(c, i)}
        scrollTo={scrollTo}
        onRange={(first, last) => pageNear(c, first, last)}
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
  )
}

/** Before the viewer: the failure that stopped it, or the wait for the feed. */
function NotOpen({ fatal }: { fatal: string }) {
  if (fatal)
    return (
      <main class="login">
        <h1>Session viewer</h1>
        <p role="alert" class="err">
          {fatal}
        </p>
      </main>
    )
  return (
    <main class="login">
      <p>Connecting…</p>
    </main>
  )
}

/** The player (when there is a recording) over the selected row's details. */
function DetailPane({
  c,
  recording,
  seek,
  selected,
  onFrameCount,
}: {
  c: ViewerCtx
  recording: RecordingSource | undefined
  seek: (Moment & { nonce: number }) | undefined
  selected: number
  onFrameCount(n: number): void
}) {
  const { feed, rows, view, update, authFail } = c
  return (
    <aside class="detail" aria-label="Details">
      {recording ? (
        <Player
          source={recording}
          events={feed.events}
          live={c.follow}
          targetId={view.target || undefined}
          seek={seek}
          onMoment={at => followMoment(c, at)}
          onAuthError={authFail}
          onFrameCount={onFrameCount}
        />
      ) : null}
      <Details
        row={selected >= 0 ? rows[selected] : undefined}
        activeNav={view.nav}
        onNav={key => update({ nav: key })}
        onPerfTrace={id => void downloadPerfTrace(c, id)}
      />
    </aside>
  )
}

/** The error banner (a jump's, a download's, else the feed's) and a bundle's warnings. */
function Banners({ feed, message }: { feed: Feed; message: string }) {
  return (
    <>
      {message ? (
        <p role="alert" class="err banner" id="error-banner">
          {message}
        </p>
      ) : null}
      {feed instanceof BundleFeed && feed.warnings.length > 0 ? (
        <ul class="warnings" id="bundle-warnings" aria-label="About this bundle">
          {feed.warnings.map(w => (
            <li key={w}>{w}</li>
          ))}
        </ul>
      ) : null}
    </>
  )
}

/** The list head's count: steps and actions on the Agent panel, else rows (and the player's frames by the Filmstrip). */
function rowCount(panel: ViewState['panel'], agent: AgentData | undefined, rows: number, recordingFrames: number) {
  if (agent)
    return `${agent.steps.length} step${agent.steps.length === 1 ? '' : 's'} · ${agent.actions.length} action${agent.actions.length === 1 ? '' : 's'}`
  const noun =
    panel === 'timeline'
      ? 'navigation'
      : panel === 'filmstrip'
        ? 'screenshot'
        : panel === 'network'
          ? 'request'
          : 'event'
  const frames =
    panel === 'filmstrip' && recordingFrames > 0
      ? ` · ${recordingFrames} recording frame${recordingFrames === 1 ? '' : 's'} in the player`
      : ''
  return `${rows} ${noun + (rows === 1 ? '' : 's')}${frames}`
}
