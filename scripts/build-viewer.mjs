// Builds the session viewer (src/viewer, Preact + TSX) into static assets with esbuild:
// app-<hash>.js, app-<hash>.css and an index.html naming them. Runs in `npm run build` (and so in
// `npm ci` / `npm pack` through prepare); the daemon serves the result at /viewer/. Nothing in the
// output loads anything from elsewhere at run time.
import { build } from 'esbuild'
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { basename, dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..')
export const DEFAULT_OUT_DIR = join(repo, 'dist', 'viewer')

/** Builds into a temporary sibling, then swaps it in, so a running daemon never sees half a build. */
export async function buildViewer({ outDir = DEFAULT_OUT_DIR, minify = true } = {}) {
  const tmp = `${outDir}.tmp-${process.pid}`
  await rm(tmp, { recursive: true, force: true })
  const result = await build({
    absWorkingDir: repo,
    entryPoints: { app: 'src/viewer/main.tsx' },
    outdir: tmp,
    entryNames: '[name]-[hash]',
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: ['chrome110', 'firefox110', 'safari16'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    minify,
    sourcemap: false,
    legalComments: 'eof',
    metafile: true,
    logLevel: 'warning',
    define: { 'process.env.NODE_ENV': '"production"' },
  })
  const outputs = Object.keys(result.metafile.outputs).map(p => basename(p))
  const js = outputs.find(f => f.endsWith('.js'))
  const css = outputs.find(f => f.endsWith('.css'))
  if (!js || !css) throw new Error(`viewer build produced ${outputs.join(', ')}`)
  const html = (await readFile(join(repo, 'src/viewer/index.html'), 'utf8'))
    .replace('{{js}}', js)
    .replace('{{css}}', css)
  await writeFile(join(tmp, 'index.html'), html)
  await mkdir(dirname(outDir), { recursive: true })
  await rm(outDir, { recursive: true, force: true })
  await rename(tmp, outDir)
  return { outDir, files: ['index.html', js, css] }
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const out = process.argv[2] ? resolve(process.argv[2]) : DEFAULT_OUT_DIR
  buildViewer({ outDir: out }).then(
    r => process.stdout.write(`viewer: ${r.files.join(', ')} -> ${r.outDir}\n`),
    err => {
      process.stderr.write(`viewer build failed: ${err.message}\n`)
      process.exit(1)
    },
  )
}
