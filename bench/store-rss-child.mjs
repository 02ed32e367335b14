// Child of store-rss.ts: the daemon's ingest core (compiled), fed N events, then reports its RSS.
import { EventLog } from '../dist/src/store/event-log.js'
import { Pipeline } from '../dist/src/pipeline/pipeline.js'
const [dir, nText] = process.argv.slice(2)
const n = Number(nText)
const log = await EventLog.open({ path: dir, retentionIntervalMs: 0 })
const pipeline = new Pipeline({ log })
const base = process.memoryUsage().rss
let peak = base
let last = Promise.resolve(true)
for (let i = 0; i < n; i++) {
  last = pipeline.emit({
    type: 'network_request',
    source: { kind: 'cdp', event: 'Network.requestWillBeSent' },
    data: {
      url: `https://shop.example.com/api/v2/products/${i}?include=prices,stock`,
      frame_id: '8F1D0E8C3B5A4F2E9D7C6B5A4F3E2D1C',
      session_id: 'B1C2D3E4F5A6B7C8D9E0F1A2B3C4D5E6',
      target_id: 'F1E2D3C4B5A6978812345678ABCDEF01',
      target_type: 'page',
      nav_seq: 3,
      request_id: `1234.${i}`,
      method: 'GET',
      document_url: 'https://shop.example.com/catalog',
      headers: {
        accept: 'application/json',
        'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Chrome/156.0 Safari/537.36',
      },
      resource_type: 'Fetch',
      initiator_type: 'script',
    },
  }).committed
  // Paced like a real producer (CDP events arrive from a socket): wait for the previous write.
  if (i % 2000 === 1999) {
    await last
    if (i % 50000 === 49999) peak = Math.max(peak, process.memoryUsage().rss)
  }
}
await log.flush()
peak = Math.max(peak, process.memoryUsage().rss)
const settled = process.memoryUsage().rss
await log.close()
const mu = process.memoryUsage()
process.stdout.write(
  JSON.stringify({
    heapMb: mu.heapUsed / 2 ** 20,
    heapTotalMb: mu.heapTotal / 2 ** 20,
    externalMb: mu.external / 2 ** 20,
    baseMb: base / 2 ** 20,
    peakMb: peak / 2 ** 20,
    afterMb: settled / 2 ** 20,
    lastSeq: log.lastSeq,
  }) + '\n',
)
