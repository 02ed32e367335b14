// Helpers for the screen recording tests: test pages, reading frames through the API, and the
// colour of a frame (decoded with Debian's ffmpeg, the one the export uses).
import { execFile, execFileSync } from 'node:child_process'

/** Background colours a page steps through, one per state (far apart, so JPEG noise cannot confuse them). */
export const STEP_COLORS: [number, number, number][] = [
  [0, 0, 0],
  [0, 0, 255],
  [0, 255, 0],
  [0, 255, 255],
  [255, 255, 0],
  [255, 0, 255],
  [128, 128, 128],
  [255, 255, 255],
  [0, 128, 0],
  [0, 0, 128],
  [128, 128, 0],
]
export const CLICK_COLOR: [number, number, number] = [255, 0, 0]

/** A page whose whole background takes STEP_COLORS[0..10] (10 changes), one every stepMs after go(); a click turns it red. */
export function stepsPage(stepMs: number): string {
  const colors = JSON.stringify(STEP_COLORS.map(c => `rgb(${c.join(',')})`))
  return `<!doctype html><html><head><title>steps</title><style>html,body{margin:0;height:100%}</style></head>
<body><script>
const colors = ${colors};
document.body.style.background = colors[0];
window.stepsDone = false;
window.go = () => { let n = 0; const step = () => { n++; document.body.style.background = colors[n]; if (n < 10) setTimeout(step, ${stepMs}); else window.stepsDone = true }; setTimeout(step, ${stepMs}) };
document.addEventListener('click', () => { document.body.style.background = 'rgb(255,0,0)' });
</script></body></html>`
}

/**
 * Repaints as fast as it can (a new picture every animation frame; with ?noise a 320x240 block of
 * random pixels too, which JPEG cannot compress); console.log every 100 ms with a counter.
 */
export const RAF_PAGE = `<!doctype html><html><head><title>raf</title><style>html,body{margin:0;height:100%}</style></head>
<body><canvas id="c" width="800" height="600"></canvas><script>
const c = document.getElementById('c').getContext('2d');
const noise = location.search.includes('noise') ? c.createImageData(320, 240) : undefined;
let i = 0;
function paint() { i++; c.fillStyle = 'hsl(' + (i * 37 % 360) + ',80%,50%)'; c.fillRect(0, 0, 800, 600);
  for (let k = 0; k < 40; k++) { c.fillStyle = 'hsl(' + ((i + k) * 13 % 360) + ',60%,40%)'; c.fillRect((i * 7 + k * 19) % 800, (k * 31) % 600, 20, 20) }
  if (noise) { const u = new Uint32Array(noise.data.buffer); for (let p = 0; p < u.length; p++) u[p] = (Math.random() * 0xffffffff) | 0xff000000; c.putImageData(noise, 40, 40) }
  requestAnimationFrame(paint) }
requestAnimationFrame(paint);
let logs = 0; window.logs = () => logs;
setInterval(() => console.log('tick ' + (++logs)), 100);
</script></body></html>`

/** Redraws the same pixels every animation frame: Chromium sends frames, all identical. */
export const SAME_PAGE = `<!doctype html><html><head><title>same</title><style>html,body{margin:0}</style></head>
<body><canvas id="c" width="400" height="300"></canvas><script>
const c = document.getElementById('c').getContext('2d');
function paint() { c.fillStyle = 'rgb(10,20,30)'; c.fillRect(0, 0, 400, 300); requestAnimationFrame(paint) }
requestAnimationFrame(paint);
</script></body></html>`

export interface FrameItem {
  frame_id: number
  ts: number
  target_id: string
  after_seq: number
  width: number
  height: number
  bytes: number
  viewport_width?: number
  viewport_height?: number
}

/** Every frame of the last hour through the API (all pages). */
export async function listFrames(
  url: string,
  browserId: string,
  token: string,
  query = 'since=1h',
): Promise<FrameItem[]> {
  const out: FrameItem[] = []
  let q = `${query}&limit=1000`
  for (;;) {
    const res = await fetch(`${url}/browsers/${browserId}/recording/frames?${q}`, {
      headers: { authorization: `Bearer ${token}` },
    })
    if (res.status !== 200) throw new Error(`frames: ${res.status} ${await res.text()}`)
    out.push(...((await res.json()) as FrameItem[]))
    if (res.headers.get('x-has-more') !== 'true') return out
    q = `offset=${res.headers.get('x-next-offset')}&limit=1000`
  }
}

export async function frameJpeg(url: string, browserId: string, token: string, id: number): Promise<Buffer> {
  const res = await fetch(`${url}/browsers/${browserId}/recording/frames/${id}`, {
    headers: { authorization: `Bearer ${token}` },
  })
  if (res.status !== 200) throw new Error(`frame ${id}: ${res.status}`)
  return Buffer.from(await res.arrayBuffer())
}

/** The mean colour of a JPEG's 8x8 block at (x, y), decoded by ffmpeg. */
export function jpegColor(jpeg: Buffer, x = 40, y = 40): Promise<[number, number, number]> {
  return new Promise((resolve, reject) => {
    const p = execFile(
      'ffmpeg',
      [
        '-v',
        'error',
        '-i',
        'pipe:0',
        '-vf',
        `crop=8:8:${x}:${y},scale=1:1`,
        '-f',
        'rawvideo',
        '-pix_fmt',
        'rgb24',
        'pipe:1',
      ],
      { encoding: 'buffer', maxBuffer: 1024 },
      (err, stdout) => {
        if (err) reject(err)
        else resolve([stdout[0]!, stdout[1]!, stdout[2]!])
      },
    )
    p.stdin!.end(jpeg)
  })
}

/** Index of the nearest colour in a palette. */
export function nearest(c: [number, number, number], palette: [number, number, number][]): number {
  let best = 0
  let bestD = Infinity
  palette.forEach((p, i) => {
    const d = (p[0] - c[0]) ** 2 + (p[1] - c[1]) ** 2 + (p[2] - c[2]) ** 2
    if (d < bestD) {
      bestD = d
      best = i
    }
  })
  return best
}

/** A solid-colour JPEG from Debian's ffmpeg (a recording frame for a hand-built bundle). */
export function colorJpeg(color: string, w = 160, h = 120): Buffer {
  return execFileSync('ffmpeg', [
    '-v',
    'error',
    '-f',
    'lavfi',
    '-i',
    `color=c=${color}:s=${w}x${h}:d=0.04`,
    '-frames:v',
    '1',
    '-f',
    'mjpeg',
    'pipe:1',
  ])
}
