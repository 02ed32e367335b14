import { createMetrics } from '../src/metrics.js'
const m = createMetrics({})
const big: unknown[] = []
for (let i = 0; i < 200; i++) big.push(new Array(1e5).fill(i))
const worst = new Map<string, number>()
for (let i = 0; i < 40; i++) {
  for (const metric of m.registry.getMetricsAsArray()) { const t0 = performance.now(); await (metric as any).get(); const dt = performance.now() - t0; worst.set(metric.name, Math.max(worst.get(metric.name) ?? 0, dt)) }
}
for (const [k, v] of [...worst].sort((a, b) => b[1] - a[1]).slice(0, 8)) console.log(v.toFixed(2), k)
