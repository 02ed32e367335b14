// Benchmark: extractZip vs Debian `unzip -q -o` on the same 256 MiB archive of mixed files, median of
// RUNS each, plus RSS growth of a daemon-like process during an HTTP upload_zip of that archive.
// Run: npx tsx bench/uploads-extract.ts [--runs N] [--mib N]
import { spawn, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createReadStream, createWriteStream, readFileSync, writeFileSync } from 'node:fs'
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { fileURLToPath } from 'node:url'
import yazl from 'yazl'
import { extractZip } from '../src/uploads/extract-zip.js'

const args = process.argv.slice(2)
const opt = (name: string, dflt: number) => {
  const i = args.indexOf(name)
  return i >= 0 ? Number(args[i + 1]) : dflt
}
const RUNS = opt('--runs', 5)
const TOTAL = opt('--mib', 256) * 1024 * 1024
const LIMITS = { maxEntries: 100_000, maxTotalBytes: 4 * 1024 ** 3, maxRatio: 200 }

const WORDS =
  'the quick brown fox jumps over lazy dog telemetry browser network console page layout shift settled idle request response header body frame loader session target navigation'.split(
    ' ',
  )
let seed = 42
const rand = () => {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff
  return seed / 0x7fffffff
}

function text(bytes: number): Buffer {
  const parts: string[] = []
  let n = 0
  while (n < bytes) {
    const w = WORDS[Math.floor(rand() * WORDS.length)]! + (rand() < 0.1 ? '\n' : ' ')
    parts.push(w)
    n += w.length
  }
  return Buffer.from(parts.join('').slice(0, bytes))
}

/** ~half compressible text, half random binary; mostly small files with a tail of large ones. */
async function buildArchive(path: string): Promise<{ files: number }> {
  const zip = new yazl.ZipFile()
  const out = pipeline(zip.outputStream, createWriteStream(path))
  let total = 0
  let files = 0
  while (total < TOTAL) {
    const r = rand()
    const size = r < 0.95 ? Math.floor(1024 + rand() * 40 * 1024) : Math.floor(512 * 1024 + rand() * 2 * 1024 * 1024)
    const binary = files % 2 === 1
    const name = `d${files % 37}/sub${files % 5}/f${files}.${binary ? 'bin' : 'txt'}`
    // like Info-ZIP, store what deflate cannot shrink
    zip.addBuffer(binary ? randomBytes(size) : text(size), name, { compress: !binary, mode: 0o100644 })
    total += size
    files++
  }
  zip.end()
  await out
  return { files }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]!
}

async function timeIt(fn: () => Promise<void>): Promise<number> {
  const t0 = process.hrtime.bigint()
  await fn()
  return Number(process.hrtime.bigint() - t0) / 1e6
}

function unzip(archive: string, dest: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn('unzip', ['-q', '-o', archive, '-d', dest], { stdio: 'inherit' })
    p.on('exit', code => (code === 0 ? resolve() : reject(new Error(`unzip exited ${code}`))))
  })
}

async function upload(port: number, archive: string, dest: string): Promise<number> {
  const size = (await stat(archive)).size
  const boundary = 'benchboundary' + randomBytes(8).toString('hex')
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="dest_path"\r\n\r\n${dest}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="zip_file"; filename="a.zip"\r\nContent-Type: application/zip\r\n\r\n`,
  )
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`)
  return new Promise<number>((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/browsers/bench/fs/upload_zip',
        headers: {
          authorization: 'Bearer bench-token',
          'content-type': `multipart/form-data; boundary=${boundary}`,
          'content-length': head.length + size + tail.length,
        },
      },
      res => {
        res.resume()
        res.on('end', () => resolve(res.statusCode ?? 0))
      },
    )
    req.on('error', reject)
    req.write(head)
    const file = createReadStream(archive)
    file.pipe(req, { end: false })
    file.on('end', () => req.end(tail))
  })
}

async function rssDuringUpload(archive: string, work: string): Promise<{ baseline: number; peak: number }> {
  // the server runs in its own process so the measured RSS is a daemon's, not this benchmark's
  const server = spawn(
    process.execPath,
    [
      ...(process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean),
      '--import',
      'tsx',
      fileURLToPath(new URL('./uploads-server.ts', import.meta.url)),
      work,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  )
  const port = await new Promise<number>((resolve, reject) => {
    server.stdout!.once('data', (b: Buffer) => resolve(Number(b.toString().trim())))
    server.once('exit', code => reject(new Error(`server exited ${code}`)))
  })
  const status = () => readFileSync(`/proc/${server.pid}/status`, 'utf8')
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status())![1]) * 1024
  const rss = () => kib('VmRSS')
  // warm up first (lazy module init, JIT, the libuv pool): growth is what one big upload adds to a running daemon
  const small = join(work, 'small.zip')
  await writeFile(
    small,
    await new Promise<Buffer>(resolve => {
      const z = new yazl.ZipFile()
      z.addBuffer(text(100_000), 'warm/up.txt')
      z.end()
      const chunks: Buffer[] = []
      z.outputStream.on('data', (c: Buffer) => chunks.push(c)).on('end', () => resolve(Buffer.concat(chunks)))
    }),
  )
  for (let i = 0; i < 3; i++)
    if ((await upload(port, small, join(work, 'uploads', `warm${i}`))) !== 201) throw new Error('warm-up upload failed')
  const baseline = rss()
  // reset the kernel's peak-RSS mark so VmHWM covers the upload only (sampling can miss short peaks)
  try {
    writeFileSync(`/proc/${server.pid}/clear_refs`, '5')
  } catch {
    /* older kernels: sampling only */
  }
  let peak = baseline
  const timer = setInterval(() => {
    peak = Math.max(peak, rss())
  }, 20)
  const answer = await upload(port, archive, join(work, 'uploads', 'dest'))
  clearInterval(timer)
  peak = Math.max(peak, rss(), kib('VmHWM'))
  server.kill()
  if (answer !== 201) throw new Error(`upload answered ${answer}`)
  return { baseline, peak }
}

const work = await mkdtemp(join(tmpdir(), 'bt-bench-uploads-'))
try {
  const archive = join(work, 'mixed.zip')
  const { files } = await buildArchive(archive)
  const size = (await stat(archive)).size
  console.log(
    `archive: ${files} files, ${(TOTAL / 2 ** 20).toFixed(0)} MiB uncompressed, ${(size / 2 ** 20).toFixed(1)} MiB on disk`,
  )
  const ours: number[] = []
  const theirs: number[] = []
  for (let i = 0; i < RUNS; i++) {
    // alternate order so page-cache warmth and writeback favour neither side
    const a = join(work, `ours-${i}`)
    const b = join(work, `unzip-${i}`)
    await mkdir(b)
    // flush the previous run's dirty pages first, so neither side pays for the other's writeback
    const runOurs = async () => {
      spawnSync('sync')
      ours.push(
        await timeIt(async () => {
          await extractZip(archive, a, LIMITS)
        }),
      )
    }
    const runUnzip = async () => {
      spawnSync('sync')
      theirs.push(await timeIt(() => unzip(archive, b)))
    }
    if (i % 2 === 0) {
      await runOurs()
      await runUnzip()
    } else {
      await runUnzip()
      await runOurs()
    }
    // outputs are deleted only at the end: on ext4, creating inodes right after thousands were
    // deleted costs several times more (find_inode_bit/recently_deleted), which would tax whichever side ran next
  }
  // how long the event loop is blocked at worst while extracting (small entries run synchronously in slices)
  const lag = monitorEventLoopDelay({ resolution: 1 })
  lag.enable()
  await extractZip(archive, join(work, 'lag'), LIMITS)
  lag.disable()
  const mo = median(ours)
  const mu = median(theirs)
  if (RUNS > 0) console.log(`extractZip: median ${mo.toFixed(0)} ms of [${ours.map(x => x.toFixed(0)).join(', ')}]`)
  if (RUNS > 0) console.log(`unzip -q -o: median ${mu.toFixed(0)} ms of [${theirs.map(x => x.toFixed(0)).join(', ')}]`)
  console.log(
    `event loop delay while extracting: p50 ${(lag.percentile(50) / 1e6).toFixed(1)} ms, p99 ${(lag.percentile(99) / 1e6).toFixed(1)} ms, max ` +
      `${(lag.max / 1e6).toFixed(1)} ms`,
  )
  if (RUNS > 0) console.log(`speed ratio extractZip/unzip = ${(mu / mo).toFixed(2)} (goal >= 0.70)`)

  const { baseline, peak } = await rssDuringUpload(archive, work)
  console.log(
    `upload_zip over HTTP: RSS baseline ${(baseline / 2 ** 20).toFixed(1)} MiB, peak ${(peak / 2 ** 20).toFixed(1)} MiB, growth ` +
      `${((peak - baseline) / 2 ** 20).toFixed(1)} MiB (goal <= 64 MiB)`,
  )
} finally {
  await rm(work, { recursive: true, force: true })
}
