// The detail pane's pieces: a value with its masked parts as "redacted" badges, header tables,
// text blocks (post data, bodies, parameters), the stack, and the raw JSON of the events.
import { useState } from 'preact/hooks'
import type { StackTrace } from '../events/index.js'
import { hasOriginalFrames, hasRedaction, isRedacted, stackLines, type Envelope } from './model.js'

const MASK = /\[redacted(?::\d+)?\]/gi

/** A value with every masked part drawn as a "redacted" badge (whole values, URL params, form fields). */
export function Value({ v }: { v: unknown }) {
  if (typeof v !== 'string') return <>{JSON.stringify(v)}</>
  if (!hasRedaction(v)) return <>{v}</>
  const parts = v.split(MASK)
  const masks = v.match(MASK) ?? []
  return (
    <>
      {parts.map((p, i) => (
        <span key={i}>
          {p}
          {i < masks.length ? (
            <span class="redacted" title={`masked by the daemon before it was stored ${masks[i]}`}>
              redacted
            </span>
          ) : null}
        </span>
      ))}
    </>
  )
}

export function Headers({ title, headers }: { title: string; headers: unknown }) {
  const entries = Object.entries((headers ?? {}) as Record<string, string>)
  return (
    <section>
      <h3>
        {title} ({entries.length})
      </h3>
      {entries.length === 0 ? (
        <p class="muted">none captured</p>
      ) : (
        <table class="kv">
          <tbody>
            {entries.map(([k, v]) => (
              <tr key={k}>
                <th scope="row">{k}</th>
                <td>
                  <Value v={v} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  )
}

export function Block({ title, text, truncated }: { title: string; text: unknown; truncated?: boolean }) {
  if (text === undefined) return null
  return (
    <section>
      <h3>
        {title}
        {truncated ? ' (truncated)' : ''}
      </h3>
      {isRedacted(text) ? (
        <p>
          <Value v={text} />
        </p>
      ) : (
        <pre class="body" tabIndex={0}>
          <Value v={String(text)} />
        </pre>
      )}
    </section>
  )
}

/** The stack: original frames first when a source map placed them, the raw ones a click away. */
export function Stack({ stack }: { stack: StackTrace | undefined }) {
  const [raw, setRaw] = useState(false)
  if (!stack) return null
  const mapped = hasOriginalFrames(stack)
  const lines = stackLines(stack, raw || !mapped)
  return (
    <section>
      <h3>
        Stack trace{' '}
        {mapped ? (
          <button type="button" class="small" onClick={() => setRaw(!raw)}>
            {raw ? 'Show original frames' : 'Show raw frames'}
          </button>
        ) : null}
      </h3>
      <ol class="stack">
        {lines.map(l =>
          l.kind === 'separator' ? (
            <li class="async" key={l.key}>
              — {l.text} —
            </li>
          ) : (
            <li key={l.key} class={l.mapped ? 'mapped' : undefined}>
              <code>{l.name}</code>{' '}
              {l.href ? (
                <a href={l.href} target="_blank" rel="noopener noreferrer">
                  {l.location}
                </a>
              ) : (
                <span>{l.location}</span>
              )}
            </li>
          ),
        )}
      </ol>
    </section>
  )
}

export function Raw({ envs }: { envs: Envelope[] }) {
  return (
    <details>
      <summary>Raw event{envs.length > 1 ? 's' : ''} (JSON)</summary>
      <pre class="body" tabIndex={0}>
        {envs
          .map(e =>
            JSON.stringify(e, (k, v) => (k === 'png' && typeof v === 'string' ? `<${v.length} base64 chars>` : v), 2),
          )
          .join('\n')}
      </pre>
    </details>
  )
}
