// Waiting on a sink without sleeping, and a producer of small valid events of every category mix.
import type { Sink } from '../../src/sink/sink.js'
import type { EventInput, Pipeline } from '../../src/pipeline/pipeline.js'

/** Resolves once the shipper's watermark reaches `seq` (an event, not a poll). */
export function ackedUpTo(s: Sink, seq: () => number): Promise<void> {
  return new Promise(resolve => {
    if (s.ackedSeq >= seq()) {
      resolve()
      return
    }
    const off = s.onAcked(acked => {
      if (acked >= seq()) {
        off()
        resolve()
      }
    })
  })
}

/** Resolves once the sink's watermark reaches `seq`; fails with the sink's health after `timeoutMs`. */
export function ackedBy(s: Sink, seq: number, timeoutMs = 60_000): Promise<void> {
  return new Promise((resolve, reject) => {
    if (s.ackedSeq >= seq) return resolve()
    const timer = setTimeout(() => {
      off()
      reject(new Error(`${s.name} did not reach seq ${seq}: ${JSON.stringify(s.health())}`))
    }, timeoutMs)
    const off = s.onAcked(a => {
      if (a < seq) return
      clearTimeout(timer)
      off()
      resolve()
    })
  })
}

/**
 * Resolves once `ok()` holds, re-checked on every shipper change and ack; a regression fails here with the
 * shipper's state after `timeoutMs`, not with the runner's whole-file timeout.
 */
export function until(s: Sink, ok: () => boolean, timeoutMs = 60_000): Promise<void> {
  return new Promise((resolve, reject) => {
    if (ok()) {
      resolve()
      return
    }
    const timer = setTimeout(() => {
      off()
      reject(new Error(`shipper condition not reached in ${timeoutMs} ms: ${JSON.stringify(s.health())}`))
    }, timeoutMs)
    const check = () => {
      if (ok()) {
        off()
        clearTimeout(timer)
        resolve()
      }
    }
    const offChange = s.onChange(check)
    const offAcked = s.onAcked(check)
    const off = () => {
      offChange()
      offAcked()
    }
  })
}

/** A mix of categories, each input small and valid. */
export function input(i: number): EventInput {
  switch (i % 4) {
    case 0:
      return { type: 'console_log', data: { level: 'log', text: `line ${i}`, args: [] } } as unknown as EventInput
    case 1:
      return {
        type: 'network_request',
        data: { request_id: `r${i}`, method: 'GET', url: `https://example.com/${i}`, headers: {} },
      } as EventInput
    case 2:
      return {
        type: 'page_navigation',
        data: { url: `https://example.com/p${i}`, frame_id: 'F' },
      } as unknown as EventInput
    default:
      return {
        type: 'interaction_click',
        data: { x: i, y: 1, selector: 'button', tag: 'BUTTON', text: 'Buy' },
      } as unknown as EventInput
  }
}

/** Emits n events like a producer (yielding now and then so group commit runs); returns the last commit. */
export async function emitMany(pipeline: Pipeline, from: number, n: number): Promise<void> {
  let last: Promise<boolean> = Promise.resolve(true)
  for (let i = from; i < from + n; i++) {
    const r = pipeline.emit(input(i))
    if (r.dropped !== undefined) throw new Error(`event ${i} was not accepted: ${r.dropped}`)
    last = r.committed
    if (i % 500 === 499) await new Promise(r => setImmediate(r))
  }
  if (!(await last)) throw new Error('last event was not committed')
}
