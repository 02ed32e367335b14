import { renderArgs } from '../collectors/console-format.js'
const a = Array.from({ length: 5000 }, (_, i) => String(i).padEnd(300, 'x'))
const frame = Buffer.from(JSON.stringify({ method: 'Runtime.consoleAPICalled', params: { type: 'log', args: a.map((v) => ({ type: 'string', value: v })) } }))
for (let i = 0; i < 12; i++) {
  const m = JSON.parse(frame.toString())
  const t0 = performance.now(); renderArgs(m.params.args, 1 << 20); console.log(i, (performance.now() - t0).toFixed(2))
}
