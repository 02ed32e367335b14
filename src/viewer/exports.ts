// Exports: the selected navigation's window (or the whole loaded window) as a HAR file or as the
// envelopes in JSON lines, handed to the browser as a download.
import { toHar } from '../har/index.js'
import type { EventFeed } from './event-feed.js'
import { inNavigation, type Envelope, type Navigation } from './model.js'

/** What an export names: the session and the loaded seq range. */
type Source = Pick<EventFeed, 'browserId' | 'firstSeq' | 'lastSeq'>

const windowOf = (events: readonly Envelope[], nav: Navigation | undefined) =>
  nav ? events.filter(e => inNavigation(e, nav)) : events

const fileName = (feed: Source, nav: Navigation | undefined, ext: string) =>
  `${feed.browserId}${nav ? `-nav-${nav.nav_seq}` : ''}.${ext}`

export function exportHar(feed: Source, events: readonly Envelope[], nav: Navigation | undefined): void {
  const har = toHar(windowOf(events, nav), {
    comment: `browser ${feed.browserId}, ${nav ? `navigation ${nav.key} ${nav.url}` : `seq ${feed.firstSeq}-${feed.lastSeq}`}, exported by the browser-telemetry viewer`,
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
