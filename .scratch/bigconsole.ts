import { renderArgs } from '../collectors/console-format.js'
import { fitEvent } from '../src/envelope-fit.js'
import { cutConsoleFrame } from '../src/monitor/console-frame-cut.js'
const a = Array.from({ length: 5000 }, (_, i) => String(i).padEnd(300, 'x'))
const frame = Buffer.from(JSON.stringify({ method: 'Runtime.consoleAPICalled', params: { type: 'log', args: a.map((v) => ({ type: 'string', value: v })), executionContextId: 1, timestamp: 1, stackTrace: { callFrames: [{ functionName: '', scriptId: '1', url: 'http://x/', lineNumber: 1, columnNumber: 2 }] } }, sessionId: 'S' }))
console.log('frame', frame.length)
const T: Record<string, number[]> = Object.create(null)
const time = <R>(k: string, f: () => R): R => { const t0 = performance.now(); const r = f(); (T[k] ??= []).push(performance.now() - t0); return r }
for (let i = 0; i < 30; i++) {
  time('cut', () => cutConsoleFrame(frame, 1 << 20))
  const s = time('toString', () => frame.toString('utf8'))
  const m = time('parse', () => JSON.parse(s))
  const { args } = time('render', () => renderArgs(m.params.args, 1 << 20))
  const ev = { ts: 1, type: 'console_log', category: 'console', source: { kind: 'cdp', event: 'x' }, data: { browser_id: 'b', target_id: 't', url: 'u', level: 'log', text: args[0], args } }
  const r = time('fit', () => fitEvent(ev as never, 1 << 20))
  time('buf', () => Buffer.from(r.json, 'latin1'))
}
for (const [k, v] of Object.entries(T)) { v.sort((a, b) => a - b); console.log(k.padEnd(10), 'median', v[15]!.toFixed(2), 'max', v[29]!.toFixed(2)) }
