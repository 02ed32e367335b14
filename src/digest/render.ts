// A digest within a character budget, as markdown or JSON. Every item is one markdown line with an
// importance; the budget keeps the most important lines first (failed steps and their errors, then
// failures, then navigations, then the rest), each section says how many it left out, and both
// forms carry the same kept items, so an agent reading either learns the same.
import type { Digest, DigestAction, DigestStep } from './types.js'

export const DEFAULT_DIGEST_CHARS = 8000
export const MIN_DIGEST_CHARS = 500
export const MAX_DIGEST_CHARS = 200_000
/** Effects told on one action line at most; the rest are counted. */
const EFFECTS_PER_LINE = 4

const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`
const time = (us: number): string => new Date(Math.floor(us / 1000)).toISOString().slice(11, 23)
const seconds = (ms: number): string => `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`

interface Line {
  section: Section
  /** 0 is kept first. */
  rank: number
  text: string
  /** Where the item sits in its section's list (the JSON form keeps the same ones). */
  ref: { list: ListName; index: number; step?: number }
}

type Section = 'steps' | 'actions' | 'navigations' | 'failed_requests' | 'console_errors' | 'incidents'
type ListName = Section | 'step_actions'

const HEADINGS: Record<Section, string> = {
  steps: '## Steps',
  actions: '## Actions outside steps',
  navigations: '## Navigations',
  failed_requests: '## Failed requests',
  console_errors: '## Console errors',
  incidents: '## Crashes, dialogs, downloads',
}
const SECTIONS = Object.keys(HEADINGS) as Section[]

export function actionLine(a: DigestAction): string {
  const effects = a.effects.slice(0, EFFECTS_PER_LINE).map(e => e.text)
  if (a.effects.length > EFFECTS_PER_LINE) effects.push(`${a.effects.length - EFFECTS_PER_LINE} more`)
  const failed = a.outcome === 'error' ? ` — failed${a.error_message ? `: ${a.error_message}` : ''}` : ''
  return `- ${time(a.ts)} ${a.title}${failed}${effects.length > 0 ? ` → ${effects.join('; ')}` : ''}`
}

function stepLine(s: DigestStep): string {
  const outcome = s.outcome ?? 'open'
  const took = s.duration_ms !== undefined ? ` in ${seconds(s.duration_ms)}` : ''
  return `### ${time(s.start_ts)} step "${s.name}": ${outcome}${took}${s.error_message ? ` — ${s.error_message}` : ''}`
}

function linesOf(d: Digest): Line[] {
  const lines: Line[] = []
  d.steps.forEach((s, i) => {
    const failed = s.outcome === 'error' || s.outcome === 'abandoned'
    lines.push({ section: 'steps', rank: failed ? 0 : 2, text: stepLine(s), ref: { list: 'steps', index: i } })
    s.actions.forEach((a, j) => {
      const bad =
        a.outcome === 'error' || a.effects.some(e => e.kind === 'request_failed' || e.kind === 'console_error')
      lines.push({
        section: 'steps',
        rank: failed && bad ? 0 : bad ? 1 : failed ? 2 : 4,
        text: actionLine(a),
        ref: { list: 'step_actions', index: j, step: i },
      })
    })
  })
  d.actions.forEach((a, i) => {
    const bad = a.outcome === 'error' || a.effects.length > 0
    lines.push({ section: 'actions', rank: bad ? 2 : 4, text: actionLine(a), ref: { list: 'actions', index: i } })
  })
  d.navigations.forEach((n, i) => {
    const vitals = n.vitals.map(
      v => `${v.name} ${v.name === 'CLS' ? v.value.toFixed(3) : Math.round(v.value)} ${v.rating}`,
    )
    lines.push({
      section: 'navigations',
      rank: n.vitals.some(v => v.rating === 'poor') ? 2 : 3,
      text: `- ${time(n.ts)} ${n.url}${vitals.length > 0 ? ` (${vitals.join(', ')})` : ''}`,
      ref: { list: 'navigations', index: i },
    })
  })
  d.failed_requests.forEach((f, i) => {
    const answer = f.status !== undefined ? String(f.status) : `failed: ${f.error ?? 'no answer'}`
    lines.push({
      section: 'failed_requests',
      rank: 1,
      text: `- ${time(f.ts)} ${f.method} ${f.url} ${answer}${f.body !== undefined ? ` — ${f.body}` : ''}`,
      ref: { list: 'failed_requests', index: i },
    })
  })
  d.console_errors.forEach((e, i) => {
    const at = e.frames.length > 0 ? `\n  at ${e.frames.join('\n  at ')}` : ''
    lines.push({
      section: 'console_errors',
      rank: 1,
      text: `- ${time(e.ts)} ${e.text}${at}`,
      ref: { list: 'console_errors', index: i },
    })
  })
  d.incidents.forEach((x, i) => {
    lines.push({
      section: 'incidents',
      rank: x.kind === 'crash' || x.kind === 'disconnect' ? 0 : 3,
      text: `- ${time(x.ts)} ${x.text}`,
      ref: { list: 'incidents', index: i },
    })
  })
  return lines
}

function header(d: Digest): string {
  const parts = [
    `# Session digest ${new Date(Math.floor(d.window.since_ts / 1000)).toISOString()} – ${new Date(Math.floor(d.window.until_ts / 1000)).toISOString()}`,
    `${plural(d.events, 'event')}${d.step_id !== undefined ? `, step ${d.step_id}` : ''}; ${plural(d.steps.length, 'step')}, ${plural(d.failed_requests.length, 'failed request')}, ${plural(d.console_errors.length, 'console error')}.`,
  ]
  if (d.dropped.events > 0)
    parts.push(
      `Dropped: ${d.dropped.events} events in ${d.dropped.gaps} gaps (shed under load, over a cap, or lost in an unclean stop).`,
    )
  return parts.join('\n')
}

const SECTION_WORDS: Record<Section, string> = {
  steps: 'step lines',
  actions: 'actions outside steps',
  navigations: 'navigations',
  failed_requests: 'failed requests',
  console_errors: 'console errors',
  incidents: 'crashes, dialogs or downloads',
}

/** The last line when the budget left something out: what, by section. */
function leftOutLine(omitted: Partial<Record<Section, number>>): string {
  const parts = SECTIONS.filter(s => omitted[s] !== undefined).map(s => `${omitted[s]} ${SECTION_WORDS[s]}`)
  return `Left out: ${parts.join(', ')} (raise max_chars or narrow the window).`
}
/** Room the left-out line may need at most. */
const LEFT_OUT_ROOM = leftOutLine(Object.fromEntries(SECTIONS.map(s => [s, 9_999_999]))).length + 2

/** The digest cut to `maxChars`: the markdown, and the digest keeping the same items with what was left out. */
export function renderDigest(d: Digest, maxChars = DEFAULT_DIGEST_CHARS): { markdown: string; digest: Digest } {
  const head = header(d)
  const lines = linesOf(d)
  // Every element costs its length and a newline; a section's heading (and the blank line before
  // it) is paid when its first line is kept; the left-out line's room is kept aside.
  let used = head.length + 1 + LEFT_OUT_ROOM
  const opened = new Set<Section>()
  const order = lines.map((l, i) => ({ l, i })).sort((a, b) => a.l.rank - b.l.rank || a.i - b.i)
  const kept = new Set<number>()
  for (const { l, i } of order) {
    const cost = l.text.length + 1 + (opened.has(l.section) ? 0 : HEADINGS[l.section].length + 2)
    if (used + cost > maxChars) continue
    kept.add(i)
    opened.add(l.section)
    used += cost
  }
  const out: string[] = [head]
  const omitted: Partial<Record<Section, number>> = {}
  for (const s of SECTIONS) {
    const mine = lines.map((l, i) => ({ l, i })).filter(x => x.l.section === s)
    const shown = mine.filter(x => kept.has(x.i))
    if (mine.length > shown.length) omitted[s] = mine.length - shown.length
    if (shown.length > 0) out.push('', HEADINGS[s], ...shown.map(x => x.l.text))
  }
  if (Object.keys(omitted).length > 0) out.push('', leftOutLine(omitted))
  return { markdown: out.join('\n') + '\n', digest: keptDigest(d, lines, kept, omitted) }
}

const refKey = (list: ListName, index: number, step?: number) => `${list}:${step ?? ''}:${index}`

function keptDigest(d: Digest, lines: Line[], kept: Set<number>, omitted: Partial<Record<Section, number>>): Digest {
  const keys = new Set<string>()
  for (const i of kept) keys.add(refKey(lines[i]!.ref.list, lines[i]!.ref.index, lines[i]!.ref.step))
  const keep = (list: ListName, index: number, step?: number) => keys.has(refKey(list, index, step))
  const steps = d.steps
    .map((s, i) => ({ s, i }))
    .filter(({ s, i }) => keep('steps', i) || s.actions.some((_, j) => keep('step_actions', j, i)))
    .map(({ s, i }) => ({ ...s, actions: s.actions.filter((_, j) => keep('step_actions', j, i)) }))
  return {
    ...d,
    steps,
    actions: d.actions.filter((_, i) => keep('actions', i)),
    navigations: d.navigations.filter((_, i) => keep('navigations', i)),
    failed_requests: d.failed_requests.filter((_, i) => keep('failed_requests', i)),
    console_errors: d.console_errors.filter((_, i) => keep('console_errors', i)),
    incidents: d.incidents.filter((_, i) => keep('incidents', i)),
    ...(Object.keys(omitted).length > 0 ? { omitted } : {}),
  }
}
