// Exports: the selected navigation's window (or the whole loaded window) as a HAR file or as the
// envelopes in JSON lines, handed to the browser as a download.
import { toHar } from '../har/index.js'
import type { Feed } from './feed.js'
import { inNavigation, type Envelope, type Navigation } from './model.js'

/** What an export names: the session and the loaded seq range. */
type Source = Pick<Feed, 'browserId' | 'firstSeq' | 'lastSeq'>

const windowOf = (events: readonly Envelope[], nav: Navigation | undefined) =>
  nav ? events.filter(e => inNavigation(e, nav)) : events

const fileName = (feed: Source, nav: Navigation | undefined, ext: string) =>
  `${feed.browserId}${nav ? `-nav-${nav.nav_seq}` : ''}.${ext}`

export function exportHar(feed: Source, events: readonly Envelope[], nav: Navigation | undefined): void {
  const har = toHar(windowOf(events, nav), {
    comment: `browser ${feed.browserId}, ${nav ? `navigation ${nav.key} ${nav.title}` : `seq ${feed.firstSeq}-${feed.lastSeq}`}, exported by the browser-telemetry viewer`,
  })
  download(fileName(feed, nav, 'har'), 'application/json', JSON.stringify(har, null, 2))
}

export function exportJsonl(feed: Source, events: readonly Envelope[], nav: Navigation | undefined): void {
  download(
    fileName(feed, nav, 'jsonl'),
    'application/x-ndjson',
    windowOf(events, nav)
      .map(e => JSON.stringify(e))
      .join('\n') + '\n',
  )
}

/** Unix microseconds -> RFC 3339 with microseconds (the events API reads them to the microsecond). */
export function isoMicros(us: number): string {
  const iso = new Date(Math.floor(us / 1000)).toISOString()
  return `${iso.slice(0, -1)}${String(Math.floor(us) % 1000).padStart(3, '0')}Z`
}

/** Hands a Blob to the browser as a download under `name`. */
export function saveBlob(name: string, blob: Blob): void {
  const url = URL.createObjectURL(blob)
  const a = document.createElement('a')
  a.href = url
  a.download = name
  document.body.appendChild(a)
  a.click()
  a.remove()
  setTimeout(() => URL.revokeObjectURL(url), 10_000)
}

function download(name: string, type: string, text: string): void {
  saveBlob(name, new Blob([text], { type }))
}
