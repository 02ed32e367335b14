import { createMetrics } from '../src/metrics.js'
const m = createMetrics({})
const big: unknown[] = []
for (let i = 0; i < 200; i++) big.push(new Array(1e5).fill(i)) // a bigger heap
for (let i = 0; i < 20; i++) { const t0 = performance.now(); const r = await m.render(); const dt = performance.now() - t0; if (i % 4 === 0) console.log(dt.toFixed(2), r.body.length) }
