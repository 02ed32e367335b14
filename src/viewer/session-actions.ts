// What the viewer does on a user's action: open or close a tree row, page history near the list's
// edges, follow or pause, jump, download, pick a row, follow the player's moment. Each works on the
// state of the render that made the handler (`ViewerCtx`), as closures in that render would.
import { AuthError, EventFeed } from './event-feed.js'
import { isoMicros, saveBlob } from './exports.js'
import type { Feed } from './feed.js'
import { rowIndexAtTime, rowTime, type Moment } from './model/player.js'
import { spanOf, rowIndexAtSeq, type AgentRow, type Row, type ViewState } from './model.js'
import { isAgentRow, type Anchor, type ScrollTarget } from './session-state.js'

export type BundleRoute = 'bundle' | 'trace.zip'

export interface ViewerCtx {
  feed: Feed
  rows: Row[]
  view: ViewState
  open: ReadonlySet<string>
  follow: boolean
  onAgent: boolean
  update(patch: Partial<ViewState>): void
  setOpen(open: ReadonlySet<string>): void
  setFollow(follow: boolean): void
  setScrollTo(s: ScrollTarget): void
  setSeek(s: Moment & { nonce: number }): void
  setJumpError(msg: string): void
  setBundleBusy(busy: '' | BundleRoute): void
  setBundleError(msg: string): void
  /** A jump's seq, scrolled to once the rows of the (possibly reloaded) window exist. */
  pendingJump: { current: number }
  anchor: { current: Anchor }
  authFail(e: unknown): void
}

/** Opens or closes an Agent panel row. */
export function toggleOpen(c: ViewerCtx, key: string): void {
  const { rows } = c
  const at = rows.findIndex(r => isAgentRow(r) && r.key === key)
  const row = rows[at] as AgentRow | undefined
  if (!row) return
  const next = new Set(c.open)
  if (row.open) {
    next.delete(key)
    // Closing a row that holds the selection moves the selection to it (a selected row keeps its
    // ancestors open).
    for (let i = at + 1; i < rows.length && (rows[i] as AgentRow).depth > row.depth; i++)
      if ((rows[i] as AgentRow).key === c.view.sel) c.update({ sel: key, seq: row.seq })
  } else next.add(key)
  c.setOpen(next)
}

/** The list shows rows first..last. */
export function pageNear(c: ViewerCtx, first: number, last: number): void {
  const { feed, rows } = c
  // Page older history in well before the top is reached (a page is 100 rows), so scrolling never waits at the edge.
  if (first <= 150 && feed.hasOlder && !feed.loading && !c.follow) {
    c.anchor.current = rows[first] ? { seq: rows[first]!.seq, index: first } : undefined
    feed.loadOlder().catch(c.authFail)
  }
  if (last >= rows.length - 150 && feed.hasNewer && !feed.loading) feed.loadNewer().catch(c.authFail)
}

/** "Load 5 minutes older": what is on top stays on screen. */
export function loadOlder(c: ViewerCtx): void {
  c.anchor.current = c.rows[0] ? { seq: c.rows[0].seq, index: 0 } : undefined
  c.feed.loadOlder().catch(c.authFail)
}

export function toggleFollow(c: ViewerCtx): void {
  const { feed } = c
  if (c.follow) {
    c.setFollow(false)
    feed.stopLive()
    return
  }
  c.setFollow(true)
  c.update({ seq: 0 })
  if (feed.hasNewer) feed.loadLatest().then(() => feed.startLive(c.authFail), c.authFail)
  else feed.startLive(c.authFail)
}

/** The user moved away from the newest rows: stop following. */
function stopFollowing(c: ViewerCtx): void {
  if (c.follow) {
    c.setFollow(false)
    c.feed.stopLive()
  }
}

/** The debug bundle or the Playwright trace of the window the viewer holds. */
export async function downloadBundle(c: ViewerCtx, route: BundleRoute): Promise<void> {
  const { feed } = c
  if (!(feed instanceof EventFeed)) return
  c.setBundleBusy(route)
  c.setBundleError('')
  try {
    const first = feed.events[0]
    const { blob, name } = await feed.bundle(first ? isoMicros(first.event.ts) : undefined, route)
    saveBlob(name, blob)
  } catch (err) {
    if (err instanceof AuthError) c.authFail(err)
    else
      c.setBundleError(
        `The ${route === 'bundle' ? 'bundle' : 'trace'} could not be downloaded: ${(err as Error).message}`,
      )
  } finally {
    c.setBundleBusy('')
  }
}

export async function downloadPerfTrace(c: ViewerCtx, traceId: string): Promise<void> {
  c.setBundleError('')
  try {
    const blob = await c.feed.perfTrace(traceId)
    if (blob) saveBlob(`perf-trace-${traceId}.json.gz`, blob)
    else c.setBundleError(`Performance trace ${traceId} is no longer kept (the oldest traces are removed first).`)
  } catch (err) {
    if (err instanceof AuthError) c.authFail(err)
    else c.setBundleError(`The performance trace could not be downloaded: ${(err as Error).message}`)
  }
}

/** Jump to a seq, an RFC-3339 time or HH:MM:SS (UTC), loading the window around it when needed. */
export async function jump(c: ViewerCtx, typed: string): Promise<void> {
  const { feed } = c
  const text = typed.trim()
  if (!text) return
  c.setJumpError('')
  c.setFollow(false)
  feed.stopLive()
  if (/^\d+$/.test(text)) {
    const seq = Number(text)
    if (!(seq >= feed.firstSeq && seq <= feed.lastSeq)) await feed.loadAroundSeq(seq).catch(c.authFail)
    c.pendingJump.current = seq
    c.update({ seq })
    c.setScrollTo({ index: rowIndexAtSeq(c.rows, seq), align: 'center', nonce: Date.now() })
  } else {
    const ms = Date.parse(/^\d{2}:\d{2}/.test(text) ? `${new Date().toISOString().slice(0, 10)}T${text}Z` : text)
    if (Number.isNaN(ms)) {
      c.setJumpError(`Cannot read ${JSON.stringify(text)}: give a seq, an RFC-3339 time or HH:MM:SS (UTC).`)
      return
    }
    const seq = await feed.loadAroundTime(new Date(ms).toISOString()).catch((err: unknown) => {
      c.authFail(err)
      return 0
    })
    c.pendingJump.current = seq
    c.update({ seq })
  }
}

/** A row picked in the list: select it, and show its moment in the player. */
export function selectRow(c: ViewerCtx, i: number): void {
  const r = c.rows[i]
  if (!r) return
  stopFollowing(c)
  if (isAgentRow(r)) {
    // A step or an action: the player goes to its start, the other panels to its time span.
    const s = spanOf(r)
    c.update({ sel: r.key, seq: r.seq, ...(s ? { from: s.from, to: s.to } : {}) })
    c.setSeek(r.kind === 'cmd' ? { tUs: r.ts, seq: r.seq, nonce: Date.now() } : { tUs: r.ts, nonce: Date.now() })
    return
  }
  c.update({ seq: r.seq })
  // The player shows the screen just before this event.
  const tUs = rowTime(r)
  if (tUs !== undefined) c.setSeek({ tUs, seq: r.seq, nonce: Date.now() })
}

/** Playing or scrubbing the recording: the list moves to the last row at or before that moment. */
export function followMoment(c: ViewerCtx, at: Moment): void {
  const { rows } = c
  if (c.onAgent) {
    // The tree is not in time order: bring the latest row started by then into view, select nothing.
    let best = -1
    rows.forEach((r, i) => {
      if (isAgentRow(r) && r.kind !== 'setup' && r.ts <= at.tUs && (best < 0 || r.ts >= (rows[best] as AgentRow).ts))
        best = i
    })
    if (best >= 0) c.setScrollTo({ index: best, align: 'center', nonce: Date.now() })
    return
  }
  const i = rowIndexAtTime(rows, at.tUs)
  stopFollowing(c)
  if (i < 0 || rows[i]!.seq === c.view.seq) return
  c.update({ seq: rows[i]!.seq })
  c.setScrollTo({ index: i, align: 'center', nonce: Date.now() })
}
