// The recording's flags and env twins, and the capture plan's `recording` (pages only).
import t from 'tap'
import { parseServeConfig, ConfigError } from '../src/config/config.js'
import { capturePlan, CAPTURE_CATEGORIES, RECORDING } from '../src/monitor/index.js'
import { CAPTURE_NEEDS } from '../collectors/index.js'
import { jpegSize } from '../collectors/recording.js'

t.test('--recording and its env twin; defaults; bad values refused', async t => {
  const off = parseServeConfig([], {})
  t.same(off.recording, {
    enabled: false,
    maxFps: 5,
    quality: 50,
    maxWidth: 960,
    maxHeight: 540,
    maxBytes: 256 * 1024 * 1024,
  })
  t.equal(parseServeConfig(['--recording'], {}).recording.enabled, true)
  t.equal(parseServeConfig([], { BROWSER_TELEMETRY_RECORDING: '1' }).recording.enabled, true)
  t.equal(parseServeConfig([], { BROWSER_TELEMETRY_RECORDING: '0' }).recording.enabled, false)
  const c = parseServeConfig(
    [
      '--recording-max-fps',
      '2',
      '--recording-quality',
      '80',
      '--recording-max-size',
      '640x480',
      '--recording-max-bytes',
      '8MiB',
    ],
    {},
  )
  t.same(c.recording, {
    enabled: false,
    maxFps: 2,
    quality: 80,
    maxWidth: 640,
    maxHeight: 480,
    maxBytes: 8 * 1024 * 1024,
  })
  t.equal(parseServeConfig([], { BROWSER_TELEMETRY_RECORDING_MAX_SIZE: '800x600' }).recording.maxWidth, 800)
  for (const args of [
    ['--recording-max-fps', '0'],
    ['--recording-max-fps', '100'],
    ['--recording-quality', '101'],
    ['--recording-max-size', '1280'],
    ['--recording-max-size', '8x8'],
    ['--recording-max-bytes', '1KiB'],
  ])
    t.throws(() => parseServeConfig(args, {}), ConfigError, args.join(' '))
})

t.test('the capture plan attaches the screencast collector to pages only, only while recording', async t => {
  const off = capturePlan(CAPTURE_CATEGORIES, CAPTURE_NEEDS)
  t.equal(off.recording, false)
  t.notOk(off.byTarget('page').collectors.includes(RECORDING))
  const on = capturePlan([...CAPTURE_CATEGORIES, RECORDING], CAPTURE_NEEDS)
  t.equal(on.recording, true)
  t.ok(on.byTarget('page').collectors.includes(RECORDING))
  for (const type of ['iframe', 'worker', 'service_worker', 'background_page'] as const)
    t.notOk(on.byTarget(type).collectors.includes(RECORDING), type)
  t.same(on.categories, off.categories, 'recording is not a category')
  t.same(capturePlan([RECORDING], CAPTURE_NEEDS).byTarget('page').domains, ['Page'], 'recording alone needs Page only')
})

t.test('jpegSize reads the SOF marker', async t => {
  // A minimal baseline JPEG header: SOI, APP0 (16 bytes), SOF0 with 48x32.
  const b = Buffer.from([
    0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00,
    0x00, 0xff, 0xc0, 0x00, 0x11, 0x08, 0x00, 0x20, 0x00, 0x30, 0x03, 0x01, 0x22, 0x00, 0x02, 0x11, 0x01, 0x03, 0x11,
    0x01,
  ])
  t.same(jpegSize(b), { width: 48, height: 32 })
  t.equal(jpegSize(Buffer.from('not a jpeg')), undefined)
})
