// A 30-minute browsing session for the export benches (bench/bundle.ts, bench/trace-export.ts),
// synthesized into a temp data dir on a simulated clock: test/helpers/session-mix.ts's events
// (navigations with their requests and bodies, console lines, clicks, WebSockets, agent commands, a
// screenshot every 5 s) through the real pipeline, plus the screen recording's frames (real JPEGs
// from ffmpeg's test pattern) in a frame store.
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { CONFIGURABLE_CATEGORIES } from '../src/events/index.js'
import { Pipeline } from '../src/pipeline/pipeline.js'
import { EventLog } from '../src/store/event-log.js'
import { FrameStore } from '../src/recording/frame-store.js'
import { sessionStep } from '../test/helpers/session-mix.js'
import { fmt } from './common.js'

const MiB = 1024 * 1024

export interface SessionShape {
  minutes: number
  stepsPerS: number
  /** Recording frames per second (0: none). */
  fps: number
}

export interface Session {
  log: EventLog
  frames: FrameStore
  /** Unix µs of the first event, and just past the last. */
  t0: number
  now: number
}

/** Opens the log and the frame store of a data dir (as the daemon lays them out). */
export async function openSession(dir: string): Promise<{ log: EventLog; frames: FrameStore }> {
  const log = await EventLog.open({
    path: join(dir, 'log'),
    retentionIntervalMs: 0,
    maxBytes: 16 * 1024 * MiB,
    maxAgeMs: 1e15,
  })
  const frames = await FrameStore.open({ dir: join(dir, 'recording'), maxBytes: 4 * 1024 * MiB, maxPendingFrames: 64 })
  return { log, frames }
}

/** 30 distinct 1280x720 JPEGs of ffmpeg's moving test pattern (a recording's frames cycle through them). */
function testJpegs(): Buffer[] {
  const all = execFileSync(
    'ffmpeg',
    [
      '-v',
      'error',
      '-f',
      'lavfi',
      '-i',
      'testsrc=s=1280x720:r=30',
      '-frames:v',
      '30',
      '-q:v',
      '8',
      '-f',
      'mjpeg',
      'pipe:1',
    ],
    { maxBuffer: 64 * MiB },
  )
  const out: Buffer[] = []
  for (let i = 0; i < all.length;) {
    const end = all.indexOf(Buffer.from([0xff, 0xd9]), i)
    if (end < 0) break
    out.push(all.subarray(i, end + 2))
    i = end + 2
  }
  return out
}

/** A screenshot-sized PNG stand-in (the PNG signature, then incompressible bytes), base64. */
function pngLike(bytes: number): string {
  const b = Buffer.alloc(bytes)
  for (let i = 0; i < bytes; i++) b[i] = (i * 2654435761) >>> 24
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(b)
  return b.toString('base64')
}

export async function sink(readable: NodeJS.ReadableStream): Promise<number> {
  let n = 0
  await pipeline(
    readable,
    new Writable({
      write(c: Buffer, _e, cb) {
        n += c.length
        cb()
      },
    }),
  )
  return n
}

/** Writes the session into `dir`; prints what it made under `label`. */
export async function synthSession(dir: string, shape: SessionShape, label: string): Promise<Session> {
  const { minutes: MINUTES, stepsPerS: STEPS_PER_S, fps: FPS } = shape
  const t0 = 1_700_000_000_000_000
  let now = t0
  const { log, frames } = await openSession(dir)
  const pipe = new Pipeline({
    log,
    categories: CONFIGURABLE_CATEGORIES,
    clock: () => now,
    sheddingClock: () => now / 1000,
  })
  const jpegs = testJpegs()
  const png = pngLike(120 * 1024)
  const steps = MINUTES * 60 * STEPS_PER_S
  const stepUs = 1_000_000 / STEPS_PER_S
  let nextFrameUs = t0
  let frameCount = 0
  const synthStart = performance.now()
  for (let n = 0; n < steps; n++) {
    now = t0 + n * stepUs
    // A screenshot every 5 s of the session (the collector's default interval).
    for (const input of sessionStep(n, { png, screenshotEvery: 5 * STEPS_PER_S })) pipe.emit(input)
    while (FPS > 0 && nextFrameUs <= now) {
      frames.add({
        ts: nextFrameUs,
        target_id: 'PAGE',
        after_seq: log.lastSeq,
        width: 1280,
        height: 720,
        jpeg: jpegs[frameCount++ % jpegs.length]!,
      })
      nextFrameUs += 1_000_000 / FPS
    }
    if (n % 500 === 499) await log.flush()
    // The store keeps at most maxPendingFrames waiting for the disk: let it write, as a real page's pace would.
    if (n % 20 === 19) await frames.flush()
  }
  await log.flush()
  await frames.flush()
  now = t0 + steps * stepUs
  console.log(
    `${label}: ${MINUTES} min session, ${log.lastSeq} events, ${frames.stats().frames} frames ` +
      `(${fmt(frames.stats().bytes / MiB, 1)} MiB); synthesized in ${fmt((performance.now() - synthStart) / 1000, 1)} s`,
  )

  return { log, frames, t0, now }
}
