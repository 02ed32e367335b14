// The detail pane: everything about the selected row (headers, post data, body, console args and
// stack, click position, raw JSON). Redacted values are shown as redactions, never as data.
import type { StackTrace } from '../events/index.js'
import { exceptionLocation } from '../events/location.js'
import {
  commandSummary,
  dataOf,
  fmtBytes,
  fmtTime,
  gapLabel,
  netSummary,
  MARKER_LABEL,
  MARKERS,
  type CommandSummary,
  type Envelope,
  type FrameRow,
  type Navigation,
  type NetRow,
  type Row,
  type SocketRow,
} from './model.js'
import { AgentDetails } from './agent-panel.js'
import { Block, Headers, Raw, Stack, Value } from './detail-parts.js'
import { NavVitals } from './nav-vitals.js'

export function Details({
  row,
  activeNav,
  onNav,
  onPerfTrace,
}: {
  row: Row | undefined
  activeNav: string
  onNav(key: string): void
  /** Saves a performance trace's file (perf_trace_recorded rows). */
  onPerfTrace?(traceId: string): void
}) {
  if (!row) return <p class="muted">Select a row (click, or arrow keys in the list) to see its details.</p>
  // The sections are called, not mounted as components: the vnode tree is the one a single function
  // gave, so DOM state (an open "Raw event" <details>) carries over between rows as it did.
  switch (row.kind) {
    case 'step':
    case 'action':
    case 'setup':
      return <AgentDetails row={row} />
    case 'cmd':
      return (
        <Details row={{ kind: 'event', seq: row.seq, ts: row.ts, env: row.env }} activeNav={activeNav} onNav={onNav} />
      )
    case 'gap':
      return (
        <div>
          <h2>{gapLabel(row.gap)}</h2>
          <p>
            These seqs were never stored (an unclean stop of the daemon, or events shed under load or over a cap).
            Nothing is missing from the rows around it.
          </p>
        </div>
      )
    case 'nav':
      return navDetails(row.nav, activeNav, onNav)
    case 'frame':
      return frameDetails(row)
    case 'net':
      return netDetails(row)
    case 'socket':
      return socketDetails(row)
    case 'event': {
      const cmd = commandSummary(row.env)
      return cmd ? commandDetails(row.env, cmd) : eventDetails(row.env, onPerfTrace)
    }
  }
}

function navDetails(n: Navigation, activeNav: string, onNav: (key: string) => void) {
  return (
    <div>
      <h2>
        Navigation {n.nav_seq} of target {n.target_id}
      </h2>
      <p class="url">{n.url}</p>
      <p>
        <button type="button" id="nav-only" onClick={() => onNav(activeNav === n.key ? '' : n.key)}>
          {activeNav === n.key ? 'Show the whole window' : 'Show only this navigation in every panel'}
        </button>
      </p>
      <table class="kv">
        <tbody>
          <tr>
            <th scope="row">started</th>
            <td>
              {fmtTime(n.ts)} (seq {n.seq}){n.started ? '' : ' — began before the loaded window'}
            </td>
          </tr>
          {MARKERS.map(m => (
            <tr key={m}>
              <th scope="row">{MARKER_LABEL[m]}</th>
              <td>{n.markers[m] !== undefined ? `${n.markers[m]!.toFixed(0)} ms` : '—'}</td>
            </tr>
          ))}
          <tr>
            <th scope="row">requests</th>
            <td>{n.requests}</td>
          </tr>
          <tr>
            <th scope="row">failures</th>
            <td>{n.failures}</td>
          </tr>
          <tr>
            <th scope="row">console errors</th>
            <td>{n.consoleErrors}</td>
          </tr>
          <tr>
            <th scope="row">layout shift (CLS)</th>
            <td>{n.cls !== undefined ? n.cls.toFixed(3) : '—'}</td>
          </tr>
          <tr>
            <th scope="row">LCP</th>
            <td>{n.lcpMs !== undefined ? `${n.lcpMs.toFixed(0)} ms` : '—'}</td>
          </tr>
        </tbody>
      </table>
      <NavVitals nav={n} />
    </div>
  )
}

function frameDetails(row: FrameRow) {
  return (
    <div>
      <h2>
        Screenshot at {fmtTime(row.ts)} (seq {row.seq})
      </h2>
      <p>
        {row.frame.width ?? '?'}×{row.frame.height ?? '?'} px, {row.frame.clicks.length} click
        {row.frame.clicks.length === 1 ? '' : 's'} drawn on it
      </p>
      <ul>
        {row.frame.clicks.map(c => (
          <li key={c.seq}>
            seq {c.seq}: ({c.x}, {c.y}) <code>{c.selector}</code>
          </li>
        ))}
      </ul>
    </div>
  )
}

function netDetails(row: NetRow) {
  const s = netSummary(row)
  const req = row.request ? dataOf(row.request) : undefined
  const res = row.response ? dataOf(row.response) : undefined
  const fail = row.failure ? dataOf(row.failure) : undefined
  return (
    <div>
      <h2>
        {s.method} {s.status ?? (s.error ? 'failed' : 'pending')}
      </h2>
      <p class="url">
        <Value v={s.url} />
      </p>
      <table class="kv">
        <tbody>
          <tr>
            <th scope="row">type</th>
            <td>{s.resourceType ?? '—'}</td>
          </tr>
          <tr>
            <th scope="row">MIME</th>
            <td>{s.mime ?? '—'}</td>
          </tr>
          <tr>
            <th scope="row">size</th>
            <td>{fmtBytes(s.size) || '—'}</td>
          </tr>
          <tr>
            <th scope="row">duration</th>
            <td>{s.durationMs !== undefined ? `${s.durationMs.toFixed(1)} ms` : '—'}</td>
          </tr>
          {s.error ? (
            <tr>
              <th scope="row">error</th>
              <td class="err">
                {s.error}
                {fail?.canceled ? ' (canceled)' : ''}
              </td>
            </tr>
          ) : null}
          {row.redirectedTo ? (
            <tr>
              <th scope="row">redirected to</th>
              <td>{row.redirectedTo}</td>
            </tr>
          ) : null}
        </tbody>
      </table>
      {req ? <Headers title="Request headers" headers={req.headers} /> : <p class="muted">request not captured</p>}
      <Block title="Post data" text={req?.post_data} truncated={row.request?.event.truncated} />
      {res ? <Headers title="Response headers" headers={res.headers} /> : null}
      <Block title="Response body" text={res?.body} truncated={row.response?.event.truncated} />
      <Raw envs={row.envelopes} />
    </div>
  )
}

function socketDetails(row: SocketRow) {
  const sk = row.socket
  return (
    <div>
      <h2>
        WebSocket {sk.status ?? 'pending'}
        {sk.error !== undefined ? <span class="err"> · {sk.error}</span> : null}
      </h2>
      <p class="url">
        <Value v={sk.url} />
      </p>
      <Headers title="Handshake request headers" headers={sk.requestHeaders} />
      <Headers title="Handshake response headers" headers={sk.responseHeaders} />
      <section>
        <h3>Frames ({sk.messages.length})</h3>
        {sk.messages.length === 0 ? (
          <p class="muted">none captured</p>
        ) : (
          <table class="kv frames">
            <tbody>
              {sk.messages.map((m, i) => (
                <tr key={i} class={`frame-${m.type}`}>
                  <th scope="row">
                    {m.type === 'send' ? '↑ sent' : '↓ received'} {fmtTime(m.time * 1e6)}
                  </th>
                  <td>
                    <code>
                      <Value v={m.data.length > 500 ? `${m.data.slice(0, 500)}…` : m.data} />
                    </code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      <Raw envs={row.envelopes} />
    </div>
  )
}

/** A CDP command a proxied client sent: outcome, duration, ids and sizes, parameters and result. */
function commandDetails(e: Envelope, cmd: CommandSummary) {
  const d = dataOf(e)
  return (
    <div>
      <h2>
        {cmd.method}{' '}
        <span class="muted">
          seq {e.seq} · {fmtTime(e.event.ts)}
        </span>
      </h2>
      <table class="kv">
        <tbody>
          <tr>
            <th scope="row">outcome</th>
            <td class={cmd.failed ? 'err' : ''}>{cmd.outcome}</td>
          </tr>
          <tr>
            <th scope="row">duration</th>
            <td>
              {cmd.durationMs.toFixed(1)} ms{cmd.slow ? ' (slow)' : ''}
            </td>
          </tr>
          {cmd.error ? (
            <tr>
              <th scope="row">error</th>
              <td class="err">{cmd.error}</td>
            </tr>
          ) : null}
          {(['connection_id', 'session_id', 'target_id', 'request_bytes', 'response_bytes'] as const).map(k =>
            d[k] !== undefined ? (
              <tr key={k}>
                <th scope="row">{k.replace('_', ' ')}</th>
                <td>{String(d[k])}</td>
              </tr>
            ) : null,
          )}
        </tbody>
      </table>
      <Block title="Parameters" text={d.params} truncated={d.params_truncated === true} />
      <Block title="Result" text={d.result} truncated={d.result_truncated === true} />
      <Raw envs={[e]} />
    </div>
  )
}

/** Any other event: its URL, text, console arguments, location and stack, a perf trace's download. */
function eventDetails(e: Envelope, onPerfTrace: ((traceId: string) => void) | undefined) {
  const d = dataOf(e)
  return (
    <div>
      <h2>
        {e.event.type}{' '}
        <span class="muted">
          seq {e.seq} · {fmtTime(e.event.ts)}
        </span>
      </h2>
      {typeof d.url === 'string' ? <p class="url">{d.url}</p> : null}
      {typeof d.text === 'string' ? (
        <pre class="body" tabIndex={0}>
          {d.text}
        </pre>
      ) : null}
      {Array.isArray(d.args) && d.args.length > 0 ? (
        <section>
          <h3>Arguments</h3>
          <ol class="args">
            {(d.args as string[]).map((a, i) => (
              <li key={i}>
                <code>{a}</code>
              </li>
            ))}
          </ol>
        </section>
      ) : null}
      {e.event.type === 'console_error' && typeof d.source_url === 'string' ? (
        <p>at {exceptionLocation(d as { source_url: string; line?: number; column?: number })}</p>
      ) : null}
      <Stack stack={d.stack_trace as StackTrace | undefined} />
      {e.event.type === 'perf_trace_recorded' && d.outcome === 'recorded' && onPerfTrace ? (
        <p>
          <button type="button" class="perf-trace-download" onClick={() => onPerfTrace(String(d.trace_id))}>
            Download performance trace
          </button>{' '}
          <span class="muted">gzip JSON for Perfetto or the DevTools Performance panel</span>
        </p>
      ) : null}
      <Raw envs={[e]} />
    </div>
  )
}
