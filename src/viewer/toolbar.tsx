// The controls above the list: the bar (follow/pause and live status, jump, exports, sign out),
// the filters (text, type, target, navigation) with what the window holds, and the panel tabs.
import { useState } from 'preact/hooks'
import { forgetToken } from './event-feed.js'
import type { Feed } from './feed.js'
import { PANELS, PANEL_TITLES, fmtTime, type Derived, type Panel, type ViewState } from './model.js'

/** A button that picks a bundle zip from disk (a label around a visually hidden file input). */
export function OpenBundleButton({ onBundle }: { onBundle(file: Blob, name: string): void }) {
  return (
    <label class="file-button">
      Open bundle…
      <input
        type="file"
        id="open-bundle"
        accept=".zip,application/zip"
        onChange={e => {
          const input = e.target as HTMLInputElement
          const f = input.files?.[0]
          if (f) onBundle(f, f.name)
          input.value = ''
        }}
      />
    </label>
  )
}

export function Toolbar({
  feed,
  follow,
  onToggleFollow,
  onJump,
  onExportHar,
  onExportJsonl,
  bundleBusy,
  onDownloadBundle,
  onDownloadTrace,
  onOpenBundle,
}: {
  feed: Feed
  follow: boolean
  onToggleFollow(): void
  /** The jump field's text as typed: a seq, an RFC-3339 time or HH:MM:SS. */
  onJump(text: string): void
  onExportHar(): void
  onExportJsonl(): void
  /** A bundle or trace download is running. */
  bundleBusy: '' | 'bundle' | 'trace.zip'
  onDownloadBundle(): void
  /** The Playwright trace of the same window. */
  onDownloadTrace(): void
  onOpenBundle(file: Blob, name: string): void
}) {
  const [jump, setJump] = useState('')
  return (
    <header class="bar">
      <h1>
        Session <span class="mono">{feed.browserId}</span>
      </h1>
      {feed.mode === 'live' ? (
        <>
          <button type="button" class={follow ? 'on' : ''} aria-pressed={follow} onClick={onToggleFollow} id="follow">
            {follow ? 'Pause' : 'Follow live'}
          </button>
          <span class={`status status-${feed.live}`} id="live-status" role="status">
            {feed.live === 'live' ? 'live' : feed.live === 'off' ? 'paused' : feed.live}
            {feed.loading ? ' · loading' : ''}
          </span>
        </>
      ) : (
        <span class="status" id="bundle-status" role="status">
          from a bundle{feed.loading ? ' · loading' : ''}
        </span>
      )}
      <form
        class="jump"
        onSubmit={e => {
          e.preventDefault()
          onJump(jump)
        }}
      >
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
      <button type="button" id="export-har" onClick={onExportHar}>
        HAR
      </button>
      <button type="button" id="export-jsonl" onClick={onExportJsonl}>
        JSON lines
      </button>
      {feed.mode === 'live' ? (
        <>
          <button type="button" id="download-bundle" onClick={onDownloadBundle} disabled={bundleBusy !== ''}>
            {bundleBusy === 'bundle' ? 'Preparing bundle…' : 'Download bundle'}
          </button>
          <button
            type="button"
            id="download-trace"
            title="A trace.zip for the Playwright trace viewer (npx playwright show-trace)"
            onClick={onDownloadTrace}
            disabled={bundleBusy !== ''}
          >
            {bundleBusy === 'trace.zip' ? 'Preparing trace…' : 'Playwright trace'}
          </button>
        </>
      ) : null}
      <OpenBundleButton onBundle={onOpenBundle} />
      {feed.mode === 'live' ? (
        <button
          type="button"
          onClick={() => {
            forgetToken()
            location.reload()
          }}
        >
          Sign out
        </button>
      ) : null}
    </header>
  )
}

export function Filters({
  view,
  types,
  derived,
  feed,
  onChange,
}: {
  view: ViewState
  /** The type filter's choices for the current panel. */
  types: string[]
  derived: Derived
  feed: Feed
  onChange(patch: Partial<ViewState>): void
}) {
  return (
    <div class="filters" role="search">
      <label>
        Filter{' '}
        <input
          id="filter-q"
          type="search"
          value={view.q}
          onInput={e => onChange({ q: (e.target as HTMLInputElement).value })}
        />
      </label>
      <label>
        Type
        <select
          id="filter-type"
          value={view.type}
          onChange={e => onChange({ type: (e.target as HTMLSelectElement).value })}
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
          onChange={e => onChange({ target: (e.target as HTMLSelectElement).value })}
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
          onChange={e => onChange({ nav: (e.target as HTMLSelectElement).value })}
        >
          <option value="">whole window</option>
          {derived.navs.map(n => (
            <option key={n.key} value={n.key}>
              #{n.nav_seq} {n.title}
            </option>
          ))}
        </select>
      </label>
      {view.from > 0 ? (
        <span class="pill span-filter" id="span-filter">
          Only {fmtTime(view.from)} – {view.to > 0 ? fmtTime(view.to) : 'the end'} (the selected {spanWhat(view.sel)}){' '}
          <button type="button" id="clear-span" onClick={() => onChange({ from: 0, to: 0 })}>
            Show all
          </button>
        </span>
      ) : null}
      <span class="muted" id="window-info">
        {feed.events.length} events loaded (seq {feed.firstSeq}–{feed.lastSeq})
        {feed.hasOlder ? ', older available' : ''}
        {derived.gaps.length > 0 ? `, ${derived.gaps.length} gap${derived.gaps.length === 1 ? '' : 's'}` : ''}
      </span>
    </div>
  )
}

/** The panel tabs; the arrow keys move between them (wrapping), as a tablist should. */
export function PanelTabs({ panel, onPick }: { panel: Panel; onPick(p: Panel): void }) {
  return (
    <div
      class="tabs"
      role="tablist"
      aria-label="Panels"
      onKeyDown={e => {
        const i = PANELS.indexOf(panel)
        const to = e.key === 'ArrowRight' ? i + 1 : e.key === 'ArrowLeft' ? i - 1 : -2
        if (to === -2) return
        const p = PANELS[(to + PANELS.length) % PANELS.length]!
        onPick(p)
        document.getElementById(`tab-${p}`)?.focus()
      }}
    >
      {PANELS.map(p => (
        <button
          type="button"
          role="tab"
          id={`tab-${p}`}
          key={p}
          aria-selected={panel === p}
          aria-controls="panel"
          tabIndex={panel === p ? 0 : -1}
          onClick={() => onPick(p)}
        >
          {PANEL_TITLES[p]}
        </button>
      ))}
    </div>
  )
}

function spanWhat(sel: string): string {
  return sel.startsWith('step:') ? 'step' : sel.startsWith('action:') ? 'action' : 'agent row'
}
