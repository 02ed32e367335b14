// Pure rules of the interaction collector: binding payload parsing (anti-forgery) and the token bucket.
import t from 'tap'
import { parseInteractionPayload, MAX_PAYLOAD_CHARS } from '../collectors/interaction.js'
import type { Context } from '../src/events/index.js'

const ctx: Context = {
  session_id: 'S1',
  target_id: 'T1',
  target_type: 'page',
  url: 'http://127.0.0.1/',
  frame_id: 'T1',
  loader_id: 'L1',
  nav_seq: 2,
}
const click = { t: 'click', x: 10, y: 20, selector: '#go', tag: 'BUTTON', text: 'Go' }

t.test('well-formed reports become events with the monitor context', async t => {
  t.same(parseInteractionPayload(JSON.stringify(click), ctx), {
    type: 'interaction_click',
    source: { kind: 'cdp', event: 'Runtime.bindingCalled' },
    data: { ...ctx, x: 10, y: 20, selector: '#go', tag: 'BUTTON', text: 'Go' },
  })
  t.same(parseInteractionPayload(JSON.stringify({ t: 'key', key: 'Enter', selector: '#q', tag: 'INPUT' }), ctx)?.data, {
    ...ctx,
    key: 'Enter',
    selector: '#q',
    tag: 'INPUT',
  })
  t.same(
    parseInteractionPayload(
      JSON.stringify({ t: 'scroll', from_x: 0, from_y: 0, to_x: 0, to_y: 480, target_selector: 'document' }),
      ctx,
    ),
    {
      type: 'interaction_scroll_settled',
      source: { kind: 'cdp', event: 'Runtime.bindingCalled' },
      data: { ...ctx, from_x: 0, from_y: 0, to_x: 0, to_y: 480, target_selector: 'document' },
    },
  )
  // Absent context stays absent.
  t.same(parseInteractionPayload(JSON.stringify(click), { session_id: 'S2' })?.data, {
    session_id: 'S2',
    x: 10,
    y: 20,
    selector: '#go',
    tag: 'BUTTON',
    text: 'Go',
  })
})

t.test('forged context and extra keys are dropped', async t => {
  const forged = {
    ...click,
    session_id: 'evil',
    target_id: 'evil',
    target_type: 'worker',
    url: 'http://evil/',
    frame_id: 'F',
    loader_id: 'L',
    nav_seq: 99,
    extra: 'x',
    constructor: 'c',
  }
  const json = JSON.stringify(forged).replace('{', '{"__proto__":{"polluted":true},')
  const got = parseInteractionPayload(json, ctx)
  t.same(got?.data, { ...ctx, x: 10, y: 20, selector: '#go', tag: 'BUTTON', text: 'Go' })
  t.same(Object.keys(got!.data).sort(), [...Object.keys(ctx), 'x', 'y', 'selector', 'tag', 'text'].sort())
  t.equal(({} as Record<string, unknown>).polluted, undefined)
  // A key report carrying click fields keeps only key fields.
  t.same(
    parseInteractionPayload(JSON.stringify({ t: 'key', key: 'a', selector: 's', tag: 'T', text: 'secret', x: 1 }), {})
      ?.data,
    { key: 'a', selector: 's', tag: 'T' },
  )
})

t.test('malformed or invalid payloads are rejected', async t => {
  const bad: unknown[] = [
    undefined,
    42,
    '',
    'not json',
    'null',
    '[]',
    '"click"',
    '{}',
    JSON.stringify({ ...click, t: 'drag' }),
    JSON.stringify({ ...click, x: '10' }),
    JSON.stringify({ ...click, x: 10.5 }),
    JSON.stringify({ ...click, text: 'x'.repeat(101) }),
    JSON.stringify({ t: 'click', x: 1, y: 2, selector: '#a', tag: 'A' }), // text missing
    JSON.stringify({ t: 'key', key: 7, selector: '#a', tag: 'A' }),
    JSON.stringify({ t: 'scroll', from_x: 0, from_y: 0, to_x: 0, to_y: null, target_selector: 'document' }),
    JSON.stringify({ ...click, selector: 'x'.repeat(MAX_PAYLOAD_CHARS) }),
  ]
  for (const payload of bad)
    t.equal(parseInteractionPayload(payload, ctx), undefined, `rejects ${String(payload).slice(0, 60)}`)
  t.ok(parseInteractionPayload(JSON.stringify({ ...click, text: 'x'.repeat(100) }), ctx), '100 chars of text is fine')
})

t.test('masked typed keys: printable keys lose their value; named keys, modifiers and shortcuts stay', async t => {
  const key = (k: string, c = false) => JSON.stringify({ t: 'key', key: k, selector: '#code', tag: 'TEXTAREA', c })
  const stored = (k: string, c = false, maskTypedKeys = true) =>
    parseInteractionPayload(key(k, c), ctx, { maskTypedKeys })?.data as { key: string } | undefined
  const typed = ['h', 'U', '7', ' ', '"', 'é', '😀']
  t.same(
    typed.map(k => stored(k)?.key),
    typed.map(() => '[redacted:8]'),
    'a character, Shift and a letter included, is stored as a key that types',
  )
  const kept = ['Enter', 'Tab', 'Backspace', 'ArrowDown', 'Shift', 'Control', 'Meta', 'F5', 'Dead', 'Unidentified']
  t.same(
    kept.map(k => stored(k)?.key),
    kept,
  )
  t.same(
    ['a', 'A', ' ', '/'].map(k => stored(k, true)?.key),
    ['a', 'A', ' ', '/'],
    'pressed with Control, Alt or Meta held: a shortcut, kept',
  )
  t.same(
    typed.map(k => stored(k, false, false)?.key),
    typed,
    'off (the default): every key as the service document defines it',
  )
  t.same(
    Object.keys(stored('h')!).sort(),
    [...Object.keys(ctx), 'key', 'selector', 'tag'].sort(),
    'the modifier flag is read, never stored',
  )
  t.same(parseInteractionPayload(key('h'), ctx)?.data, { ...ctx, key: 'h', selector: '#code', tag: 'TEXTAREA' })
})
