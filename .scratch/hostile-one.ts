import { hostileCases, runHostileCase } from '../test/helpers/hostile.js'
const teardowns: (() => unknown)[] = []
const reg = { teardown(fn: () => unknown) { teardowns.push(fn) } }
const c = hostileCases({ requests: 1000, iframes: 250, depth: 300 }).find((c) => c.name.startsWith(process.env.CASE ?? 'console: 5,000'))!
const runs = Number(process.env.RUNS ?? 1)
for (let i = 0; i < runs; i++) {
  const r = await runHostileCase(reg, c)
  console.log(JSON.stringify({ healthz: r.healthz, rss: r.peakRssMb }))
  for (const l of r.logLines) if (process.env.GREP && new RegExp(process.env.GREP).test(l)) console.log(l)
  for (const fn of teardowns.reverse()) await fn(); teardowns.length = 0
}
