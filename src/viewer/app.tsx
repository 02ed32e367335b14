// The session viewer: login, toolbar (follow/pause, jump, exports), filters, panel tabs, a
// virtualised list per panel and the detail pane. State that matters for sharing (panel, filters,
// navigation, position) lives in the URL fragment; the token lives only in sessionStorage.
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks'
import { toHar } from '../har/index.js'
import { Details } from './details.js'
import {
  PANELS,
  PANEL_TITLES,
  MARKERS,
  MARKER_LABEL,
  commandSummary,
  dataOf,
  decodeView,
  derive,
  encodeView,
  fmtBytes,
  fmtTime,
  gapLabel,
  inNavigation,
  netSummary,
  panelRows,
  rowIndexAtSeq,
  typeOptions,
  waterfall,
  type NetRow,
  type Envelope,
  type Navigation,
  type Panel,
  type Row,
  type ViewState,
} from './model.js'
import { AuthError, EventFeed, forgetToken, readToken, saveToken, takeTokenFromFragment } from './event-feed.js'
import { VirtualList } from './virtual-list.js'

const ROW_HEIGHT: Record<Panel, number> = {
  timeline: 72,
  filmstrip: 236,
  network: 28,
  console: 28,
  interactions: 28,
  agent: 28,
  lane: 28,
  all: 28,
}

export function App() {
  const [boot] = useState(() => takeTokenFromFragment())
  const [token, setToken] = useState(readToken())
  const [authError, setAuthError] = useState('')
  if (!token) {
    return (
      <Login
        error={authError}
        onToken={t => {
          saveToken(t)
          setAuthError('')
          setToken(t)
        }}
      />
    )
  }
  return (
    <Viewer
      key={token}
      token={token}
      browserHint={boot.browser}
      onAuthError={m => {
        forgetToken()
        setAuthError(m)
        setToken(undefined)
      }}
    />
  )
}

function Login({ error, onToken }: { error: string; onToken(t: string): void }) {
  const [value, setValue] = useState('')
  return (
    <main class="login">
      <h1>browser-telemetry session viewer</h1>
      <form
        onSubmit={e => {
          e.preventDefault()
          if (value.trim()) onToken(value.trim())
        }}
      >
        <label for="token">
          API token (needs the <code>read</code> scope)
        </label>
        <input
          id="token"
          name="token"
          type="password"
          autocomplete="off"
          value={value}
          onInput={e => setValue((e.target as HTMLInputElement).value)}
        />
        <button type="submit">Open session</button>
        {error ? (
          <p role="alert" class="err">
            {error}
          </p>
        ) : null}
        <p class="muted">
          Run <code>browser-telemetry open</code> for a link that signs in by itself. The token is kept in this tab only
          (sessionStorage).
        </p>
      </form>
    </main>
  )
}

async function resolveBrowserId(hint: string | undefined): Promise<string> {
  if (hint) return hint
  const res = await fetch('/healthz', { cache: 'no-store' })
  const body = (await res.json()) as { browser_id?: string }
  if (!body.browser_id) throw new Error('the daemon did not report its browser id')
  return body.browser_id
}

function download(name: string, type: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type }))
  const a = document.createElement('a')
  a.href = url
  a.download = name
  document.body.appendChild(a)
  a.click()
  a.remove()
  setTimeout(() => URL.revokeObjectURL(url), 10_000)
}

function Viewer({
  token,
  browserHint,
  onAuthError,
}: {
  token: string
  browserHint?: string
  onAuthError(msg: string): void
}) {
  const [feed, setFeed] = useState<EventFeed>()
  const [fatal, setFatal] = useState('')
  const [view, setView] = useState<ViewState>(() => decodeView(location.hash))
  const [version, setVersion] = useState(0)
  const [follow, setFollow] = useState(view.seq === 0)
  const [scrollTo, setScrollTo] = useState<{
    index: number
    align: 'start' | 'center' | 'end' | 'auto'
    nonce: number
  }>()
  const [jump, setJump] = useState('')
  const [jumpError, setJumpError] = useState('')
  /** A jump's seq, scrolled to once the rows of the (possibly reloaded) window exist. */
  const pendingJump = useRef(0)
  /** The row on top before older rows were prepended: its seq and index then. */
  const anchor = useRef<{ seq: number; index: number } | undefined>(undefined)

  const authFail = (e: unknown) => {
    if (e instanceof AuthError) onAuthError(`The daemon refused the token (${e.message}).`)
    else setFatal((e as Error).message)
  }

  useEffect(() => {
    let s: EventFeed | undefined
    resolveBrowserId(browserHint)
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

  const events: readonly Envelope[] = feed?.events ?? []
  const derived = useMemo(() => derive(events), [events])
  const nav: Navigation | undefined = useMemo(() => derived.navs.find(n => n.key === view.nav), [derived, view.nav])
  const rows: Row[] = useMemo(
    () => panelRows(view.panel, events, { q: view.q, type: view.type, target: view.target, nav }, derived),
    [view.panel, view.q, view.type, view.target, nav, events, derived],
  )
  const types = useMemo(() => typeOptions(view.panel, events), [view.panel, events])
  const scale = useMemo(() => waterfall(rows), [rows])
  const selected = view.seq > 0 ? rows.findIndex(r => r.seq === view.seq && r.kind !== 'gap') : -1
  const dataRows = rows.filter(r => r.kind !== 'gap').length

  // Follow: keep the newest row in view as live events arrive.
  useEffect(() => {
    if (follow && rows.length > 0) setScrollTo({ index: rows.length - 1, align: 'end', nonce: version })
  }, [version, follow, rows.length])
  // Position: a panel switch or a jump brings the selected seq into view.
  useEffect(() => {
    if (view.seq > 0 && rows.length > 0 && !follow)
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
  const doJump = async (e: Event) => {
    e.preventDefault()
    const text = jump.trim()
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
  const windowEvents = () => (nav ? events.filter(e => inNavigation(e, nav)) : events)
  const exportHar = () => {
    const envs = windowEvents()
    const har = toHar(envs, {
      comment: `browser ${feed.browserId}, ${nav ? `navigation ${nav.key} ${nav.url}` : `seq ${feed.firstSeq}-${feed.lastSeq}`}, exported by the browser-telemetry viewer`,
    })
    download(
      `${feed.browserId}${nav ? `-nav-${nav.nav_seq}` : ''}.har`,
      'application/json',
      JSON.stringify(har, null, 2),
    )
  }
  const exportJsonl = () => {
    download(
      `${feed.browserId}${nav ? `-nav-${nav.nav_seq}` : ''}.jsonl`,
      'application/x-ndjson',
      windowEvents()
        .map(e => JSON.stringify(e))
        .join('\n') + '\n',
    )
  }
  const selectRow = (i: number) => {
    const r = rows[i]
    if (!r) return
    if (follow) {
      setFollow(false)
      feed.stopLive()
    }
    update({ seq: r.seq })
  }

  return (
    <div class="app">
      <header class="bar">
        <h1>
          Session <span class="mono">{feed.browserId}</span>
        </h1>
        <button type="button" class={follow ? 'on' : ''} aria-pressed={follow} onClick={toggleFollow} id="follow">
          {follow ? 'Pause' : 'Follow live'}
        </button>
        <span class={`status status-${feed.live}`} id="live-status" role="status">
          {feed.live === 'live' ? 'live' : feed.live === 'off' ? 'paused' : feed.live}
          {feed.loading ? ' · loading' : ''}
        </span>
        <form class="jump" onSubmit={e => void doJump(e)}>
          <label for="jump">Jump to</label>
          <input
            id="jump"
            placeholder="seq or time"
            value={jump}
            onInput={e => setJump((e.target as HTMLInputElement).value)}
          />
          <button type="submit">Go</button>
        </form>
        <span class="spacer" />
        <button type="button" id="export-har" onClick={exportHar}>
          HAR
        </button>
        <button type="button" id="export-jsonl" onClick={exportJsonl}>
          JSON lines
        </button>
        <button
          type="button"
          onClick={() => {
            forgetToken()
            location.reload()
          }}
        >
          Sign out
        </button>
      </header>

      <div class="filters" role="search">
        <label>
          Filter{' '}
          <input
            id="filter-q"
            type="search"
            value={view.q}
            onInput={e => update({ q: (e.target as HTMLInputElement).value })}
          />
        </label>
        <label>
          Type
          <select
            id="filter-type"
            value={view.type}
            onChange={e => update({ type: (e.target as HTMLSelectElement).value })}
            disabled={types.length === 0}
          >
            <option value="">all</option>
            {types.map(t => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </label>
        <label>
          Target
          <select
            id="filter-target"
            value={view.target}
            onChange={e => update({ target: (e.target as HTMLSelectElement).value })}
          >
            <option value="">all</option>
            {derived.targets.map(t => (
              <option key={t.id} value={t.id}>
                {t.type} {t.id.slice(0, 8)} {t.url.slice(0, 60)}
              </option>
            ))}
          </select>
        </label>
        <label>
          Navigation
          <select
            id="filter-nav"
            value={view.nav}
            onChange={e => update({ nav: (e.target as HTMLSelectElement).value })}
          >
            <option value="">whole window</option>
            {derived.navs.map(n => (
              <option key={n.key} value={n.key}>
                #{n.nav_seq} {n.url.slice(0, 80)}
              </option>
            ))}
          </select>
        </label>
        <span class="muted" id="window-info">
          {events.length} events loaded (seq {feed.firstSeq}–{feed.lastSeq}){feed.hasOlder ? ', older available' : ''}
          {derived.gaps.length > 0 ? `, ${derived.gaps.length} gap${derived.gaps.length === 1 ? '' : 's'}` : ''}
        </span>
      </div>

      <main class="content">
        <div
          class="tabs"
          role="tablist"
          aria-label="Panels"
          onKeyDown={e => {
            const i = PANELS.indexOf(view.panel)
            const to = e.key === 'ArrowRight' ? i + 1 : e.key === 'ArrowLeft' ? i - 1 : -2
            if (to === -2) return
            const p = PANELS[(to + PANELS.length) % PANELS.length]!
            update({ panel: p, type: '' })
            document.getElementById(`tab-${p}`)?.focus()
          }}
        >
          {PANELS.map(p => (
            <button
              type="button"
              role="tab"
              id={`tab-${p}`}
              key={p}
              aria-selected={view.panel === p}
              aria-controls="panel"
              tabIndex={view.panel === p ? 0 : -1}
              onClick={() => update({ panel: p, type: '' })}
            >
              {PANEL_TITLES[p]}
            </button>
          ))}
        </div>

        {feed.error || jumpError ? (
          <p role="alert" class="err banner">
            {jumpError || feed.error}
          </p>
        ) : null}

        <div class="main" id="panel" role="tabpanel" aria-labelledby={`tab-${view.panel}`}>
          <section class="list">
            <div class="list-head">
              <span id="row-count" data-count={dataRows}>
                {dataRows}{' '}
                {(view.panel === 'timeline'
                  ? 'navigation'
                  : view.panel === 'filmstrip'
                    ? 'frame'
                    : view.panel === 'network'
                      ? 'request'
                      : 'event') + (dataRows === 1 ? '' : 's')}
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
                  Load older
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
              renderRow={i => <RowView row={rows[i]!} scale={scale} activeNav={view.nav} />}
            />
          </section>
          <aside class="detail" aria-label="Details">
            <Details
              row={selected >= 0 ? rows[selected] : undefined}
              activeNav={view.nav}
              onNav={key => update({ nav: key })}
            />
          </aside>
        </div>
      </main>
    </div>
  )
}

function levelOf(e: Envelope): string {
  // console.error() calls carry level + args; uncaught exceptions (Runtime.exceptionThrown) do not.
  if (
    e.event.type === 'console_error' &&
    (e.event.source.event === 'Runtime.exceptionThrown' || dataOf(e).args === undefined)
  )
    return 'exception'
  const l = dataOf(e).level
  return typeof l === 'string' ? l : 'log'
}

function RowView({
  row,
  activeNav,
  scale,
}: {
  row: Row
  activeNav: string
  scale(r: NetRow): { left: number; width: number }
}) {
  switch (row.kind) {
    case 'gap':
      return (
        <div class="gap" data-gap={row.gap.count}>
          {gapLabel(row.gap)}
        </div>
      )
    case 'nav': {
      const n = row.nav
      const span = Math.max(1, ...MARKERS.map(m => n.markers[m] ?? 0))
      return (
        <div class="nav" data-started={String(n.started)}>
          <div class="nav-line">
            <span class="mono">#{n.nav_seq}</span> <span class="url">{n.url || '(unknown url)'}</span>
            {activeNav === n.key ? <span class="pill">filtering all panels</span> : null}
          </div>
          <div class="markers" aria-hidden="true">
            {n.incidents.map(i => (
              <span
                key={`i${i.seq}`}
                class={`marker m-${i.kind}`}
                style={{ left: `${Math.min(100, (Math.max(0, i.atMs) / span) * 100)}%` }}
                title={`${i.label} (${i.atMs.toFixed(0)} ms)`}
              />
            ))}
            {MARKERS.map(m =>
              n.markers[m] !== undefined ? (
                <span
                  key={m}
                  class={`marker m-${m}`}
                  style={{ left: `${(n.markers[m]! / span) * 100}%` }}
                  title={`${MARKER_LABEL[m]} ${n.markers[m]!.toFixed(0)} ms`}
                />
              ) : null,
            )}
          </div>
          <div class="nav-sum">
            {fmtTime(n.ts)} · {n.requests} requests · <span class={n.failures ? 'err' : ''}>{n.failures} failed</span> ·{' '}
            <span class={n.consoleErrors ? 'err' : ''}>{n.consoleErrors} console errors</span> · CLS {n.cls.toFixed(3)}{' '}
            · LCP {n.lcpMs !== undefined ? `${n.lcpMs.toFixed(0)} ms` : '—'}
            {n.incidents.map(i => (
              <span key={`t${i.seq}`} class={`incident i-${i.kind}`}>
                {' '}
                · {i.label}
              </span>
            ))}
            {MARKERS.map(m =>
              n.markers[m] !== undefined ? (
                <span key={m} class="mk-text">
                  {' '}
                  · {MARKER_LABEL[m]} {n.markers[m]!.toFixed(0)} ms
                </span>
              ) : null,
            )}
          </div>
        </div>
      )
    }
    case 'frame': {
      const f = row.frame
      return (
        <div class="frame">
          <span class="frame-meta">
            {fmtTime(f.ts)}
            <br />
            seq {f.seq}
            <br />
            {f.clicks.length} click{f.clicks.length === 1 ? '' : 's'}
          </span>
          <div class="shot">
            <img
              src={`data:image/png;base64,${f.png}`}
              alt={`screenshot at ${fmtTime(f.ts)}`}
              loading="lazy"
              decoding="async"
            />
            {f.width && f.height
              ? f.clicks.map(c => (
                  <span
                    key={c.seq}
                    class="click-marker"
                    data-x={c.x}
                    data-y={c.y}
                    title={`click at (${c.x}, ${c.y}) ${c.selector}`}
                    style={{ left: `${(c.x / f.width!) * 100}%`, top: `${(c.y / f.height!) * 100}%` }}
                  />
                ))
              : null}
          </div>
        </div>
      )
    }
    case 'net': {
      const s = netSummary(row)
      const bad = s.error !== undefined || (s.status ?? 0) >= 400
      const w = scale(row)
      return (
        <div class={`cols net ${bad ? 'bad' : ''}`}>
          <span class="c-time">{fmtTime(row.ts)}</span>
          <span class="c-method">{s.method}</span>
          <span class="c-status">{s.status ?? (s.error ? 'failed' : '…')}</span>
          <span class="c-url" title={s.url}>
            {s.url}
          </span>
          <span class="c-mime">{s.mime ?? s.error ?? ''}</span>
          <span class="c-size">{fmtBytes(s.size)}</span>
          <span class="c-dur">{s.durationMs !== undefined ? `${s.durationMs.toFixed(0)} ms` : ''}</span>
          <span class="c-bar" aria-hidden="true">
            <span
              class="bar-fill"
              style={{ left: `${(w.left * 100).toFixed(2)}%`, width: `${(w.width * 100).toFixed(2)}%` }}
            />
          </span>
        </div>
      )
    }
    case 'socket': {
      const sk = row.socket
      const sent = sk.messages.filter(m => m.type === 'send').length
      return (
        <div class={`cols net socket ${sk.error !== undefined ? 'bad' : ''}`}>
          <span class="c-time">{fmtTime(row.ts)}</span>
          <span class="c-method">WS</span>
          <span class="c-status">{sk.status ?? '…'}</span>
          <span class="c-url" title={sk.url}>
            {sk.url}
          </span>
          <span class="c-mime">
            {sent} sent · {sk.messages.length - sent} received
          </span>
          <span class="c-size" />
          <span class="c-dur">
            {sk.endUs !== undefined ? `${((sk.endUs - sk.startUs) / 1000).toFixed(0)} ms` : 'open'}
          </span>
          <span class="c-bar" aria-hidden="true" />
        </div>
      )
    }
    case 'event': {
      const e = row.env
      const d = dataOf(e)
      const cmd = commandSummary(e)
      if (cmd) {
        return (
          <div class={`cols ev cat-control cmd ${cmd.failed ? 'cmd-failed' : ''} ${cmd.slow ? 'cmd-slow' : ''}`}>
            <span class="c-time">{fmtTime(e.event.ts)}</span>
            <span class="c-seq">{e.seq}</span>
            <span class="c-type">{cmd.outcome}</span>
            <span class="c-text" title={cmd.error ?? cmd.method}>
              {cmd.method} · {cmd.durationMs.toFixed(0)} ms{cmd.slow ? ' · slow' : ''}
              {cmd.error ? ` · ${cmd.error}` : ''}
            </span>
          </div>
        )
      }
      const cat = e.event.category
      const level = cat === 'console' ? levelOf(e) : ''
      const text =
        cat === 'console'
          ? String(d.text ?? '')
          : cat === 'interaction'
            ? `${e.event.type.replace('interaction_', '')} ${String(d.key ?? '')} ${String(d.selector ?? d.target_selector ?? '')}${e.event.type === 'interaction_click' ? ` at (${String(d.x)}, ${String(d.y)})` : ''}`
            : summaryOf(e)
      return (
        <div class={`cols ev cat-${cat} lvl-${level}`}>
          <span class="c-time">{fmtTime(e.event.ts)}</span>
          <span class="c-seq">{e.seq}</span>
          <span class="c-type">{level ? (level === 'exception' ? 'uncaught' : level) : e.event.type}</span>
          <span class="c-text" title={text}>
            {text}
          </span>
        </div>
      )
    }
  }
}

function summaryOf(e: Envelope): string {
  const d = dataOf(e)
  const skip = new Set(['png', 'headers', 'body', 'stack_trace', 'session_id', 'frame_id', 'loader_id'])
  return Object.entries(d)
    .filter(([k]) => !skip.has(k))
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ')
    .slice(0, 300)
}
