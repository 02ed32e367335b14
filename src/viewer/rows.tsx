// The list's rows: one renderer per row kind (navigation, frame, request, socket, event, gap) and
// the fixed height each panel's rows are drawn at (the windowed list needs it up front).
import {
  MARKERS,
  MARKER_LABEL,
  VITAL_NAMES,
  commandSummary,
  dataOf,
  fmtBytes,
  fmtRequestUrl,
  fmtTime,
  gapLabel,
  netSummary,
  type Envelope,
  type Frame,
  type Navigation,
  type NetRow,
  type Panel,
  type Row,
  type SocketRow,
  vitalText,
} from './model.js'
import { AgentRowView } from './agent-panel.js'

export const ROW_HEIGHT: Record<Panel, number> = {
  timeline: 72,
  filmstrip: 236,
  network: 28,
  console: 28,
  interactions: 28,
  agent: 28,
  lane: 28,
  all: 28,
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

export function RowView({
  row,
  activeNav,
  scale,
  onToggle,
}: {
  row: Row
  activeNav: string
  scale(r: NetRow): { left: number; width: number }
  /** The Agent panel: open or close the row with this key. */
  onToggle?(key: string): void
}) {
  // The renderers are called, not mounted as components: the vnode tree stays one element per row,
  // so the list's DOM is diffed exactly as when they were one function.
  switch (row.kind) {
    case 'step':
    case 'action':
    case 'setup':
    case 'cmd':
      return <AgentRowView row={row} onToggle={onToggle} />
    case 'gap':
      return (
        <div class="gap" data-gap={row.gap.count}>
          {gapLabel(row.gap)}
        </div>
      )
    case 'nav':
      return navRow(row.nav, activeNav)
    case 'frame':
      return frameRow(row.frame)
    case 'net':
      return netRow(row, scale(row))
    case 'socket':
      return socketRow(row)
    case 'event':
      return eventRow(row.env)
  }
}

/** Where a navigation's marks sit on its strip: its markers, incidents and long frames. */
function navMarkers(n: Navigation, span: number) {
  return (
    <div class="markers" aria-hidden="true">
      {n.longFrames.map(f => (
        <span
          key={`f${f.seq}`}
          class="marker m-loaf"
          style={{ left: `${Math.min(100, (f.atMs / span) * 100)}%` }}
          title={`long animation frame ${f.durationMs.toFixed(0)} ms: ${f.label} (at ${f.atMs.toFixed(0)} ms)`}
        />
      ))}
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
  )
}

/** A navigation's summary line: counts, vitals (or CLS and LCP), long frames, incidents, markers. */
function navSummary(n: Navigation) {
  const vitals = VITAL_NAMES.filter(v => n.vitals[v] !== undefined)
  return (
    <div class="nav-sum">
      {fmtTime(n.ts)} · {n.requests} requests · <span class={n.failures ? 'err' : ''}>{n.failures} failed</span> ·{' '}
      <span class={n.consoleErrors ? 'err' : ''}>{n.consoleErrors} console errors</span>
      {vitals.length > 0 ? (
        vitals.map(v => (
          <span key={v} class={`vital v-${n.vitals[v]!.rating}`} title={n.vitals[v]!.rating}>
            {' '}
            · {v} {vitalText(v, n.vitals[v]!.value)}
          </span>
        ))
      ) : (
        <>
          {' '}
          · CLS {n.cls !== undefined ? n.cls.toFixed(3) : '—'} · LCP{' '}
          {n.lcpMs !== undefined ? `${n.lcpMs.toFixed(0)} ms` : '—'}
        </>
      )}
      {n.longFrameCount > 0 ? (
        <span class="long-frames">
          {' '}
          · {n.longFrameCount} long frame{n.longFrameCount === 1 ? '' : 's'}
        </span>
      ) : null}
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
  )
}

function navRow(n: Navigation, activeNav: string) {
  const span = Math.max(1, ...MARKERS.map(m => n.markers[m] ?? 0), ...n.longFrames.map(f => f.atMs + f.durationMs))
  return (
    <div class="nav" data-started={String(n.started)}>
      <div class="nav-line">
        <span class="mono">#{n.nav_seq}</span> <span class="url">{n.title || '(unknown url)'}</span>
        {activeNav === n.key ? <span class="pill">filtering all panels</span> : null}
      </div>
      {navMarkers(n, span)}
      {navSummary(n)}
    </div>
  )
}

function frameRow(f: Frame) {
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

function netRow(row: NetRow, w: { left: number; width: number }) {
  const s = netSummary(row)
  const bad = s.error !== undefined || (s.status ?? 0) >= 400
  return (
    <div class={`cols net ${bad ? 'bad' : ''}`}>
      <span class="c-time">{fmtTime(row.ts)}</span>
      <span class="c-method">{s.method}</span>
      <span class="c-status">{s.status ?? (s.error ? 'failed' : '…')}</span>
      <span class="c-url" title={s.url}>
        {fmtRequestUrl(s.url, s.documentUrl)}
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

function socketRow(row: SocketRow) {
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
      <span class="c-dur">{sk.endUs !== undefined ? `${((sk.endUs - sk.startUs) / 1000).toFixed(0)} ms` : 'open'}</span>
      <span class="c-bar" aria-hidden="true" />
    </div>
  )
}

/** An event row; a CDP command (a proxied client's) gets its outcome and duration instead. */
function eventRow(e: Envelope) {
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
  const d = dataOf(e)
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

function summaryOf(e: Envelope): string {
  const d = dataOf(e)
  const skip = new Set(['png', 'headers', 'body', 'stack_trace', 'session_id', 'frame_id', 'loader_id'])
  return Object.entries(d)
    .filter(([k]) => !skip.has(k))
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ')
    .slice(0, 300)
}
