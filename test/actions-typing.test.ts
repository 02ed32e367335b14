// Fast typing and shortcuts, from the CDP frames a client sends to the actions derived: the proxy's
// command log (src/proxy/command-log.ts, folding past 20 commands of a method in a second) fed the
// frames Playwright's keyboard sends, on a manual clock, its records made envelopes, and the one
// actions module reading them. A fold keeps what actions need (characters summed, event types
// counted, its own times); a press or a named key is never folded; a shortcut names its key.
import t from 'tap'
import { CommandLog, FOLD_AFTER } from '../src/proxy/command-log.js'
import { deriveActions } from '../src/actions/index.js'
import { validateEvent, type Envelope, type EventData, type TelemetryEvent } from '../src/events/index.js'
import type { Emit } from '../src/pipeline/pipeline.js'
import { fakeAccepted } from './helpers/store.js'
import { SessionBuilder, T0 } from './helpers/agent-session.js'

type Command = EventData<'cdp_command'>

/** A client on one page session: every frame it sends answered `answerMs` later; envelopes as stored. */
function client() {
  let now = 10_000.25 // monotonic ms
  let seq = 0
  const envelopes: Envelope[] = []
  const emit: Emit = input => {
    const event = { ...input, ts: T0 + Math.round(now * 1000), category: 'control' } as unknown as TelemetryEvent
    const issues = validateEvent(event)
    if (issues.length) throw new Error(`invalid ${input.type}: ${JSON.stringify(issues)}`)
    envelopes.push({ seq: ++seq, event })
    return fakeAccepted(input)
  }
  const log = new CommandLog({ emit, connectionId: 'C1', targetId: 'T1', now: () => now })
  let id = 0
  const send = (method: string, params: object, answerMs = 1, gapMs = 1) => {
    const myId = ++id
    log.fromClient(Buffer.from(JSON.stringify({ id: myId, method, params })), false)
    now += answerMs
    log.fromBrowser(Buffer.from(`{"id":${myId},"result":{}}`), false)
    now += gapMs
  }
  const key = (params: object) => send('Input.dispatchKeyEvent', params)
  return {
    envelopes,
    log,
    advance: (ms: number) => (now += ms),
    /** page.keyboard.type(text): keyDown with the text, keyUp; Enter for a newline. */
    type(text: string) {
      for (const ch of text) {
        if (ch === '\n') {
          key({ type: 'keyDown', key: 'Enter', text: '\r', modifiers: 0 })
          key({ type: 'keyUp', key: 'Enter', modifiers: 0 })
        } else {
          key({ type: 'keyDown', key: ch, text: ch, modifiers: 0 })
          key({ type: 'keyUp', key: ch, modifiers: 0 })
        }
      }
    },
    /** page.keyboard.press('Control+A'): the modifiers down (each one's own bit set), the key, all up. */
    press(combo: string) {
      const BIT: Record<string, number> = { Alt: 1, Control: 2, Meta: 4, Shift: 8 }
      const parts = combo.split('+')
      const last = parts.pop()!
      let mods = 0
      for (const m of parts) {
        mods |= BIT[m]!
        key({ type: 'rawKeyDown', key: m, text: '', modifiers: mods })
      }
      const chKey = last === 'Space' ? ' ' : last
      // A key that types something with no command modifier held is keyDown with text, else rawKeyDown.
      const types = (mods & 7) === 0 && [...chKey].length === 1
      key({ type: types ? 'keyDown' : 'rawKeyDown', key: chKey, text: types ? chKey : '', modifiers: mods })
      key({ type: 'keyUp', key: chKey, modifiers: mods })
      for (const m of parts.reverse()) {
        mods &= ~BIT[m]!
        key({ type: 'keyUp', key: m, modifiers: mods })
      }
    },
    commands: () => envelopes.filter(e => e.event.type === 'cdp_command').map(e => e.event.data as Command),
  }
}

const LINE = 'const answer = computeTheAnswer(input, { retries: 3, timeoutMs: 2500 }); // 91 characters!!'

t.test('91 characters typed in under a second: one fold that keeps the sum, one type action', async t => {
  t.equal([...LINE].length, 91)
  const c = client()
  c.type(LINE)
  c.advance(1000) // the second is over: the fold goes out with the connection's next record
  c.log.end()
  const cmds = c.commands()
  const folds = cmds.filter(x => x.count !== undefined)
  t.equal(cmds.length - folds.length, FOLD_AFTER, 'the first 20 key events one by one')
  t.same(
    folds.map(f => ({ count: f.count, input_chars: f.input_chars, input_types: f.input_types })),
    [{ count: 182 - FOLD_AFTER, input_chars: 91 - FOLD_AFTER / 2, input_types: { keyDown: 81, keyUp: 81 } }],
    'the fold sums the characters and counts each event type',
  )
  t.equal(folds[0]!.span_ms, (182 - FOLD_AFTER) * 2 - 1, 'from its first command sent to its last answer')
  t.ok(folds[0]!.flush_delay_ms! >= 1000, `emitted after its second: ${folds[0]!.flush_delay_ms} ms after`)
  const actions = deriveActions(c.envelopes)
  t.same(
    actions.map(a => [a.kind, a.title, a.command_seqs.length, a.end_ts - a.start_ts]),
    [['type', 'type 91 characters', FOLD_AFTER + 1, (182 * 2 - 1) * 1000]],
    'one action, the exact count, its real times',
  )
})

t.test('a slower typist across seconds, and a newline: the run is one action, Enter its own', async t => {
  const c = client()
  // 10 ms per character: the Enter comes late in the first second, past the fold threshold, and
  // the next line runs into the second after.
  for (const ch of LINE) {
    c.type(ch)
    c.advance(6)
  }
  c.type('\nreturn answer')
  c.advance(1000)
  c.log.end()
  const folds = c.commands().filter(x => x.count !== undefined)
  const enter = c.commands().find(x => x.input_key === 'Enter')!
  t.same(
    folds.map(f => f.id < enter.id),
    [true, false],
    'the fold so far went out before the Enter, which was recorded on its own; the typing after it folds again',
  )
  t.notOk(
    c.commands().some(x => x.count !== undefined && (x.input_key !== undefined || x.input_types?.rawKeyDown)),
    'no fold holds a named key',
  )
  t.same(
    deriveActions(c.envelopes).map(a => [a.kind, a.title]),
    [
      ['type', 'type 91 characters'],
      ['press', 'press Enter'],
      ['type', 'type 13 characters'],
    ],
  )
})

t.test('shortcuts name their key; Shift and a letter is text', async t => {
  const c = client()
  c.type('x'.repeat(30)) // past the fold threshold, so the shortcuts below meet an open fold
  for (const combo of ['Control+A', 'Control+Space', 'Shift+Alt+F', 'Meta+/']) {
    c.advance(2500) // each its own action
    c.press(combo)
  }
  c.advance(2500)
  c.press('Shift+A')
  c.type('bc')
  c.advance(1000)
  c.log.end()
  const keys = c
    .commands()
    .filter(x => x.input_key !== undefined)
    .map(x => `${x.input_type}:${x.input_key}`)
  t.same(keys, [
    'rawKeyDown:Control',
    'rawKeyDown:A',
    'keyUp:A',
    'keyUp:Control',
    'rawKeyDown:Control',
    'rawKeyDown:Space',
    'keyUp:Space',
    'keyUp:Control',
    'rawKeyDown:Shift',
    'rawKeyDown:Alt',
    'rawKeyDown:F',
    'keyUp:F',
    'keyUp:Alt',
    'keyUp:Shift',
    'rawKeyDown:Meta',
    'rawKeyDown:/',
    'keyUp:/',
    'keyUp:Meta',
    'rawKeyDown:Shift',
    'keyUp:Shift',
  ])
  t.same(
    deriveActions(c.envelopes).map(a => [a.kind, a.title]),
    [
      ['type', 'type 30 characters'],
      ['press', 'press Control+A'],
      ['press', 'press Control+Space'],
      ['press', 'press Shift+Alt+F'],
      ['press', 'press Meta+/'],
      ['type', 'type 3 characters'],
    ],
  )
})

t.test("page.fill: the element comes from the page's input report, the count from insertText", async t => {
  const s = new SessionBuilder()
  s.cmd(100, 'Runtime.callFunctionOn', { dur: 2 }) // 1: focus and select the field
  s.cmd(103, 'Runtime.callFunctionOn', { dur: 1 }) // 2
  s.cmd(106, 'Input.insertText', { input_chars: 12, dur: 2 }) // 3
  s.page('interaction_input', 107, { input_type: 'insertText', selector: '#email', tag: 'INPUT' }) // 4
  s.cmd(109, 'Runtime.releaseObject', { dur: 1 }) // 5
  // A paste from a menu much later into another field: no key, no insertText of ours.
  s.cmd(5000, 'Input.insertText', { input_chars: 3, dur: 1 }) // 6
  s.page('interaction_input', 5001, { input_type: 'insertText', selector: 'textarea#notes', tag: 'TEXTAREA' }) // 7
  t.same(
    deriveActions(s.envelopes).map(a => [a.kind, a.title, a.command_seqs]),
    [
      ['type', 'type 12 characters into #email', [1, 2, 3, 5]],
      ['type', 'type 3 characters into textarea#notes', [6]],
    ],
  )
})
