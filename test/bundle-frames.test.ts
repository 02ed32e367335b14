// The recording in a bundle: frames/<frame_id>.jpg and frames/index.json for the window's frames
// (the frame store's own metadata), the frame-id gaps of the window in the manifest, and
// recording.webm encoded with ffmpeg (ffprobe reads it back); without ffmpeg the manifest says why.
import { colorJpeg } from './helpers/recording.js'
import t from 'tap'
import { execFile } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { BundleManifest } from '../src/bundle/manifest.js'
import { FrameStore, type FrameMeta } from '../src/recording/frame-store.js'
import { BROWSER_ID, T0_US, startBundleApi, unzipAll, standardToolsAccept } from './helpers/bundle.js'
import { tempDir } from './helpers/store.js'
import { oneTrack } from '../src/util/one-track.js'

const run = promisify(execFile)
const SEC = 1_000_000
const iso = (us: number) => new Date(us / 1000).toISOString()

async function withFrames(t: Parameters<typeof startBundleApi>[0], ffmpeg?: null) {
  // Frames 1..12, one every 2 s from T0; 5 is refused (too large for the store): a gap.
  const store = await FrameStore.open({ dir: await tempDir(t), maxBytes: 200_000, maxPendingFrames: 100 })
  t.teardown(() => store.close())
  const api = await startBundleApi(t, {
    source: () => ({ frames: store, recordingEnabled: () => true, ...(ffmpeg === null ? { ffmpeg: null } : {}) }),
  })
  const colors = [
    'red',
    'green',
    'blue',
    'yellow',
    'white',
    'black',
    'gray',
    'cyan',
    'magenta',
    'orange',
    'navy',
    'olive',
  ]
  for (let i = 0; i < 12; i++) {
    api.setClock(T0_US + i * 2 * SEC)
    await api.emitStep(i * 2)
    store.add({
      ts: T0_US + i * 2 * SEC + 1000,
      target_id: 'PAGE',
      after_seq: api.log.lastSeq,
      width: 160,
      height: 120,
      jpeg: i === 4 ? Buffer.alloc(300_000, 1) : colorJpeg(colors[i]!),
    })
  }
  await store.flush()
  api.setClock(T0_US + 60 * SEC)
  return { api, store }
}

t.test('frames, their index and gaps, and the video', async t => {
  const { api, store } = await withFrames(t)
  const since = T0_US + 3 * SEC
  const until = T0_US + 21 * SEC
  const res = await api.get(
    `/browsers/${BROWSER_ID}/telemetry/bundle?since=${encodeURIComponent(iso(since))}&until=${encodeURIComponent(iso(until))}`,
  )
  t.equal(res.status, 200)
  const zip = Buffer.from(await res.arrayBuffer())
  await standardToolsAccept(t, zip)
  const files = await unzipAll(zip)
  const listed = store.list({ sinceUs: since, untilUs: until, limit: 1000 }).items
  t.same(
    listed.map(f => f.frame_id),
    [3, 4, 6, 7, 8, 9, 10, 11],
    'the window holds frames 3-11 but 5 (refused)',
  )
  const index = JSON.parse(files.get('frames/index.json')!.toString()) as FrameMeta[]
  t.same(index, listed, 'frames/index.json: the store metadata of the window, oldest first')
  for (const f of listed)
    t.same(files.get(`frames/${f.frame_id}.jpg`), await store.read(f.frame_id), `frame ${f.frame_id}`)
  const m = JSON.parse(files.get('manifest.json')!.toString()) as BundleManifest
  t.match(m.recording, {
    enabled: true,
    frames: 8,
    gaps: [{ from_frame_id: 5, to_frame_id: 5, reason: 'too_large' }],
    video: 'recording.webm',
  })
  t.equal(m.files['recording.webm']?.frames, 9, 'the frames plus the held last one')
  const dir = await tempDir(t, 'bt-bundle-webm-')
  await writeFile(join(dir, 'r.webm'), files.get('recording.webm')!)
  const { stdout } = await run('ffprobe', [
    '-v',
    'error',
    '-count_frames',
    '-show_entries',
    'format=duration,format_name:stream=codec_name,nb_read_frames',
    '-of',
    'json',
    join(dir, 'r.webm'),
  ])
  const p = JSON.parse(stdout) as {
    format: { duration: string; format_name: string }
    streams: { codec_name: string; nb_read_frames: string }[]
  }
  t.match(p.format.format_name, /webm/)
  t.equal(p.streams[0]!.codec_name, 'vp8')
  t.equal(Number(p.streams[0]!.nb_read_frames), 9)
  // 4 s to 20 s between the first and last frame of the window, plus the last held 1 s.
  t.ok(Math.abs(Number(p.format.duration) - 17) <= 1, `duration ${p.format.duration} s`)
})

t.test('without ffmpeg: the frames, no video, and why', async t => {
  const { api } = await withFrames(t, null)
  const res = await api.get(`/browsers/${BROWSER_ID}/telemetry/bundle?since=${encodeURIComponent(iso(T0_US))}`)
  const files = await unzipAll(Buffer.from(await res.arrayBuffer()))
  t.notOk(files.has('recording.webm'))
  t.equal(JSON.parse(files.get('frames/index.json')!.toString()).length, 11)
  const m = JSON.parse(files.get('manifest.json')!.toString()) as BundleManifest
  t.equal(m.recording.video, null)
  t.match(m.recording.video_note, /ffmpeg was not on the daemon's PATH; install it with `apt-get install ffmpeg`/)
})

t.test('one tab per video: the busiest tab, or the one asked for', async t => {
  const f = (target_id: string, n: number) => ({ target_id, n })
  const frames = [f('A', 1), f('B', 2), f('A', 3), f('B', 4), f('A', 5)]
  t.same(
    oneTrack(frames).map(x => x.n),
    [1, 3, 5],
    'the tab with the most frames',
  )
  t.same(
    oneTrack(frames, 'B').map(x => x.n),
    [2, 4],
    'the tab asked for',
  )
  t.same(
    oneTrack(frames, 'C').map(x => x.n),
    [1, 3, 5],
    'a tab without frames: the busiest',
  )
  t.same(
    oneTrack([f('A', 1)]).map(x => x.n),
    [1],
  )

  // Two visible tabs painting at once: their frames alternate in the store.
  const store = await FrameStore.open({ dir: await tempDir(t), maxBytes: 200_000, maxPendingFrames: 100 })
  t.teardown(() => store.close())
  const api = await startBundleApi(t, { source: () => ({ frames: store, recordingEnabled: () => true }) })
  const tabs = ['PAGE', 'OTHER', 'PAGE', 'OTHER', 'PAGE', 'PAGE']
  for (const [i, target_id] of tabs.entries()) {
    api.setClock(T0_US + i * SEC)
    await api.emitStep(i)
    const jpeg = colorJpeg(target_id === 'PAGE' ? 'blue' : 'red')
    store.add({ ts: T0_US + i * SEC + 1000, target_id, after_seq: api.log.lastSeq, width: 160, height: 120, jpeg })
  }
  await store.flush()
  api.setClock(T0_US + 60 * SEC)
  const res = await api.get(`/browsers/${BROWSER_ID}/telemetry/bundle?since=${encodeURIComponent(iso(T0_US))}`)
  t.equal(res.status, 200)
  const files = await unzipAll(Buffer.from(await res.arrayBuffer()))
  const m = JSON.parse(files.get('manifest.json')!.toString()) as BundleManifest
  t.equal(m.recording.frames, 6, 'every frame is in frames/')
  t.equal(m.recording.video_target_id, 'PAGE')
  t.equal(m.files['recording.webm']?.frames, 5, "the video: PAGE's 4 frames plus the held last one")
})
