// A heavy local page, as a busy real site loads: 20 stylesheets, 40 scripts, 30 images, 30 fetched JSON files, 300
// console lines, two layout shifts and a 30 ms long task. Shared by bench/overhead.ts (what watching
// costs) and test/heavy-page-complete.test.ts (normal-site activity is never shed or capped).
import type { IncomingMessage, ServerResponse } from 'node:http'

/** What one load of the page does (the document itself is one more request). */
export const HEAVY = { stylesheets: 20, scripts: 40, images: 30, fetches: 30, consoleLines: 300 } as const

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAIAAACQkWg2AAAAF0lEQVR4nGP8z8DAwMDAxMDAwMDAAAANHQEDasKb6QAAAABJRU5ErkJggg==',
  'base64',
)

/** The page; n makes every subresource URL of one load unique (no cache between loads). */
export function heavyHtml(n: string): string {
  const css = Array.from(
    { length: HEAVY.stylesheets },
    (_, i) => `<link rel="stylesheet" href="/css/${i}.css?n=${n}">`,
  ).join('')
  const js = Array.from({ length: HEAVY.scripts }, (_, i) => `<script src="/js/${i}.js?n=${n}"></script>`).join('')
  const img = Array.from(
    { length: HEAVY.images },
    (_, i) => `<img width="16" height="16" src="/img/${i}.png?n=${n}">`,
  ).join('')
  return `<!doctype html><html><head><title>heavy</title>${css}</head><body><h1 id="top">Heavy page</h1>
<div id="content">${'<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit.</p>'.repeat(40)}</div>${img}${js}
<script>
for (let i = 0; i < 20; i++) console.log('inline line', i, { i, s: 'x'.repeat(20) })
const t0 = performance.now(); while (performance.now() - t0 < 30) {} // a 30 ms long task
for (let i = 0; i < ${HEAVY.fetches}; i++) fetch('/data/' + i + '.json?n=${n}').then((r) => r.json())
setTimeout(() => { const d = document.createElement('div'); d.style.height = '120px'; document.body.prepend(d) }, 30)
setTimeout(() => { const d = document.createElement('div'); d.style.height = '80px'; document.body.prepend(d) }, 90)
</script></body></html>`
}

/** Serves /heavy.html?n=<load> and its subresources (40 scripts x 7 lines + 20 inline = 300 console lines). */
export function heavyHandler(req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://x')
  const path = url.pathname
  const send = (type: string, body: string | Buffer) => {
    res.writeHead(200, { 'content-type': type, 'cache-control': 'no-store' })
    res.end(body)
  }
  if (path === '/heavy.html') return send('text/html', heavyHtml(url.searchParams.get('n') ?? '0'))
  if (path.startsWith('/css/')) return send('text/css', `.c${path.length} { color: #123; margin: 1px }\n`.repeat(50))
  if (path.startsWith('/js/'))
    return send('text/javascript', `for (let i = 0; i < 7; i++) console.log('script ${path}', i, [i, i * 2]);\n`)
  if (path.startsWith('/img/')) return send('image/png', PNG)
  if (path.startsWith('/data/'))
    return send(
      'application/json',
      JSON.stringify({ path, items: Array.from({ length: 20 }, (_, i) => ({ i, name: `item ${i}` })) }),
    )
  res.writeHead(404)
  res.end()
}
