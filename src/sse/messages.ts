// SSE framing of committed records: `id: <seq>\ndata: <envelope>\n\n`, encoded once for every
// client that gets them (live fan-out, the ring, backlog pages).
import type { StoredRecord } from '../store/event-log.js'
import type { MessageBatch } from './message-ring.js'

/**
 * SSE messages of records, encoded once (the same bytes go to every live client), with where each
 * message starts (a client that already has some of them gets a subarray, not a copy). Records from
 * the write path carry their envelope bytes: those are copied, not decoded and encoded again.
 */
export const sseMessages = (records: readonly StoredRecord[]): MessageBatch => {
  const n = records.length
  const seqs = new Float64Array(n)
  const starts = new Uint32Array(n)
  let size = 0
  for (let i = 0; i < n; i++) {
    const r = records[i]!
    if (r.envelopeBytes === undefined) return messagesOfText(records)
    seqs[i] = r.seq
    starts[i] = size
    size += 13 + String(r.seq).length + r.envelopeBytes.byteLength // `id: `, `\ndata: `, `\n\n`
  }
  const buf = Buffer.allocUnsafe(size)
  let at = 0
  for (const r of records) {
    at += buf.write(`id: ${r.seq}\ndata: `, at, 'latin1')
    buf.set(r.envelopeBytes!, at)
    at += r.envelopeBytes!.byteLength
    buf[at++] = 0x0a
    buf[at++] = 0x0a
  }
  return { buf, seqs, starts }
}
const messagesOfText = (records: readonly StoredRecord[]): MessageBatch => {
  const parts: Buffer[] = []
  const seqs = new Float64Array(records.length)
  const starts = new Uint32Array(records.length)
  let size = 0
  records.forEach((r, i) => {
    const part = Buffer.from(`id: ${r.seq}\ndata: ${r.json}\n\n`, 'utf8')
    seqs[i] = r.seq
    starts[i] = size
    size += part.length
    parts.push(part)
  })
  return { buf: Buffer.concat(parts, size), seqs, starts }
}
