// A small TypeScript app built with esbuild's JS API into five minified bundles, one per way a
// script's map is found: an external map named by a comment, an inline (data: URL) map, a map
// matched by Debug ID, a map that is only uploaded, and a map named by a SourceMap header. Each
// bundle fails in its own way (uncaught error with a cause, unhandled rejection, console.error
// with a cause, console.warn, console.assert) from nested functions. Line numbers of the sources
// are fixed here, so tests can state the exact original positions.
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { build } from 'esbuild'

export const DEBUG_ID = '3a4b5c6d-1111-4222-8333-944455556666'

const SOURCES: Record<string, string[]> = {
  'util.ts': [
    'export function innerMost(value: number): number {',
    '  if (value > 1) {',
    '    throw new TypeError(`bad value ${value}`)',
    '  }',
    '  return value',
    '}',
  ],
  'checkout.ts': [
    "import { innerMost } from './util'",
    '',
    'export class Checkout {',
    '  total(n: number): number {',
    '    return innerMost(n * 2)',
    '  }',
    '}',
    '',
    'export function middleLayer(n: number): number {',
    '  const c = new Checkout()',
    '  return c.total(n) + 1',
    '}',
    '',
    'export function outerEntry(n: number): number {',
    '  try {',
    '    return middleLayer(n)',
    '  } catch (err) {',
    "    throw new Error('checkout failed', { cause: err })",
    '  }',
    '}',
  ],
  'external.ts': [
    "import { outerEntry } from './checkout'",
    '',
    'function runExternal(): void {',
    '  outerEntry(5)',
    '}',
    '',
    'setTimeout(runExternal, 0)',
  ],
  'inline.ts': [
    'function makeError(code: number): RangeError {',
    '  return new RangeError(`cart ${code} missing`)',
    '}',
    '',
    'function loadCart(code: number): Promise<number> {',
    '  return Promise.reject(makeError(code))',
    '}',
    '',
    'function startInline(): void {',
    '  void loadCart(404)',
    '}',
    '',
    'startInline()',
  ],
  'debugid.ts': [
    "import { outerEntry } from './checkout'",
    '',
    'function reportFailure(): void {',
    '  try {',
    '    outerEntry(9)',
    '  } catch (err) {',
    "    console.error('checkout error', err)",
    '  }',
    '}',
    '',
    'reportFailure()',
  ],
  'uploaded.ts': [
    'function warnLow(stock: number): void {',
    '  console.warn(`low stock: ${stock}`)',
    '}',
    '',
    'function checkStock(): void {',
    '  warnLow(2)',
    '}',
    '',
    'checkStock()',
  ],
  'header.ts': [
    'function assertTotals(total: number): void {',
    "  console.assert(total > 100, 'total too low', total)",
    '}',
    '',
    'function verifyCart(): void {',
    '  assertTotals(42)',
    '}',
    '',
    'verifyCart()',
  ],
}

export interface BuiltApp {
  /** Path under the site -> body (scripts and the maps the site serves). */
  files: Map<string, Buffer>
  /** The maps tests upload: the Debug-ID map (no URL needed) and the upload-only map. */
  debugIdMap: Buffer
  uploadedMap: Buffer
  /** On disk, for the CLI. */
  uploadedMapPath: string
}

async function writeSources(dir: string): Promise<void> {
  await mkdir(join(dir, 'src'), { recursive: true })
  for (const [name, lines] of Object.entries(SOURCES)) await writeFile(join(dir, 'src', name), lines.join('\n') + '\n')
}

/**
 * One minified bundle that throws `rate` uncaught errors a second (each with a cause, from nested
 * functions) for `seconds`, then GETs /done?n=<errors thrown>; with `map` its external map is named
 * by its comment (dist/storm.min.js.map), without it the bundle names none.
 */
export async function buildStorm(dir: string, map: boolean): Promise<{ js: Buffer; map: Buffer }> {
  await writeSources(dir)
  await writeFile(
    join(dir, 'src', 'storm.ts'),
    [
      "import { outerEntry } from './checkout'",
      'const q = new URLSearchParams(location.search)',
      "const rate = Number(q.get('rate') ?? 1000)",
      "const end = performance.now() + Number(q.get('seconds') ?? 10) * 1000",
      'const start = performance.now()',
      'let thrown = 0',
      'function throwOne(): void {',
      '  thrown++',
      '  outerEntry(5)',
      '}',
      'function tick(): void {',
      '  const now = performance.now()',
      '  const due = Math.floor(((Math.min(now, end) - start) * rate) / 1000)',
      '  while (thrown + pending < due) {',
      '    pending++',
      '    setTimeout(() => {',
      '      pending--',
      '      throwOne()',
      '    }, 0)',
      '  }',
      '  if (now < end) setTimeout(tick, 5)',
      "  else setTimeout(() => fetch('/done?n=' + thrown), 500)",
      '}',
      'let pending = 0',
      'tick()',
    ].join('\n') + '\n',
  )
  await build({
    absWorkingDir: dir,
    entryPoints: ['src/storm.ts'],
    outfile: `dist/storm${map ? '' : '-bare'}.min.js`,
    bundle: true,
    minify: true,
    format: 'iife',
    target: 'chrome110',
    sourcemap: map ? 'linked' : 'external',
    logLevel: 'silent',
  })
  const base = join(dir, 'dist', `storm${map ? '' : '-bare'}.min.js`)
  return { js: await readFile(base), map: await readFile(`${base}.map`) }
}

/** Builds the five bundles into `dir` (sources in dir/src, output in dir/dist). */
export async function buildApp(dir: string): Promise<BuiltApp> {
  await writeSources(dir)
  const bundle = (entry: string, sourcemap: 'linked' | 'inline' | 'external') =>
    build({
      absWorkingDir: dir,
      entryPoints: [`src/${entry}.ts`],
      outfile: `dist/${entry}.min.js`,
      bundle: true,
      minify: true,
      format: 'iife',
      target: 'chrome110',
      sourcemap,
      logLevel: 'silent',
    })
  await bundle('external', 'linked')
  await bundle('inline', 'inline')
  await bundle('debugid', 'linked')
  await bundle('uploaded', 'external')
  await bundle('header', 'external')
  const read = (f: string) => readFile(join(dir, 'dist', f))
  const files = new Map<string, Buffer>()
  files.set('/dist/external.min.js', await read('external.min.js'))
  files.set('/dist/external.min.js.map', await read('external.min.js.map'))
  files.set('/dist/inline.min.js', await read('inline.min.js'))
  // The Debug-ID bundle names a map the site does not serve: the uploaded map must be matched by its
  // Debug ID before any fetch. (esbuild writes no Debug IDs; they are added as bundlers that do write them.)
  files.set(
    '/dist/debugid.min.js',
    Buffer.concat([await read('debugid.min.js'), Buffer.from(`//# debugId=${DEBUG_ID}\n`)]),
  )
  const debugIdMap = Buffer.from(
    JSON.stringify({ ...JSON.parse((await read('debugid.min.js.map')).toString()), debugId: DEBUG_ID }),
  )
  files.set('/dist/uploaded.min.js', await read('uploaded.min.js'))
  const uploadedMap = await read('uploaded.min.js.map')
  files.set('/dist/header.min.js', await read('header.min.js'))
  files.set('/maps/header.map', await read('header.min.js.map'))
  return { files, debugIdMap, uploadedMap, uploadedMapPath: join(dir, 'dist', 'uploaded.min.js.map') }
}

/** Base64 VLQ of one signed value. */
export function vlq(n: number): string {
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
  let v = n < 0 ? (-n << 1) | 1 : n << 1
  let out = ''
  do {
    let digit = v & 31
    v >>>= 5
    if (v > 0) digit |= 32
    out += chars[digit]
  } while (v > 0)
  return out
}

/**
 * The mappings of a synthetic map: `lines` generated lines of `perLine` segments, each pointing at
 * a source (cycling), a line and a column, every other one named.
 */
export function syntheticMappings(lines: number, perLine: number, sources: number, names: number): string {
  const out: string[] = []
  let src = 0
  let line = 0
  let col = 0
  let name = 0
  for (let l = 0; l < lines; l++) {
    let gen = 0
    const segs: string[] = []
    for (let s = 0; s < perLine; s++) {
      const nextSrc = (l * perLine + s) % sources
      const nextLine = l
      const nextCol = s * 3
      let seg = vlq(s === 0 ? 0 : 7) + vlq(nextSrc - src) + vlq(nextLine - line) + vlq(nextCol - col)
      gen += s === 0 ? 0 : 7
      src = nextSrc
      line = nextLine
      col = nextCol
      if (s % 2 === 0 && names > 0) {
        const nextName = (l + s) % names
        seg += vlq(nextName - name)
        name = nextName
      }
      segs.push(seg)
    }
    void gen
    out.push(segs.join(','))
  }
  return out.join(';')
}
