// Filmstrip: frames and the clicks drawn on the nearest one.
import { dataOf, num, str, type Envelope } from './data.js'

export interface ClickMark {
  seq: number
  x: number
  y: number
  selector: string
}
export interface Frame {
  seq: number
  ts: number
  png: string
  width?: number
  height?: number
  clicks: ClickMark[]
}

/** PNG width/height from the IHDR chunk (bytes 16..24) of a base64 PNG, without decoding the image. */
export function pngSize(base64: string): { width: number; height: number } | undefined {
  if (base64.length < 32) return undefined
  let bin: string
  try {
    bin = atob(base64.slice(0, 32))
  } catch {
    return undefined
  }
  if (bin.charCodeAt(1) !== 0x50 || bin.slice(12, 16) !== 'IHDR') return undefined
  const u32 = (o: number) =>
    ((bin.charCodeAt(o) << 24) >>> 0) +
    (bin.charCodeAt(o + 1) << 16) +
    (bin.charCodeAt(o + 2) << 8) +
    bin.charCodeAt(o + 3)
  return { width: u32(16), height: u32(20) }
}

export function buildFrames(screens: readonly Envelope[], clicks: readonly Envelope[]): Frame[] {
  const frames: Frame[] = screens.map(e => {
    const png = str(dataOf(e).png) ?? ''
    return { seq: e.seq, ts: e.event.ts, png, ...pngSize(png), clicks: [] }
  })
  if (frames.length === 0) return frames
  for (const c of clicks) {
    const d = dataOf(c)
    // Frames are sorted by ts (ts never decreases in seq order): binary search the nearest.
    let lo = 0
    let hi = frames.length - 1
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (frames[mid]!.ts < c.event.ts) lo = mid + 1
      else hi = mid
    }
    let best = lo
    if (lo > 0 && Math.abs(frames[lo - 1]!.ts - c.event.ts) <= Math.abs(frames[lo]!.ts - c.event.ts)) best = lo - 1
    frames[best]!.clicks.push({ seq: c.seq, x: num(d.x) ?? 0, y: num(d.y) ?? 0, selector: str(d.selector) ?? '' })
  }
  return frames
}
