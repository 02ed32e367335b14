// Where upload_zip may write: dest_path must be absolute and resolve (physically, following existing
// symlinks) inside one of the upload roots, and never inside the daemon's own files (its data dir,
// its token files), which a root such as /tmp or a home may hold.
import { mkdir, realpath, stat } from 'node:fs/promises'
import { posix } from 'node:path'
import { UploadError } from './errors.js'
import { checkDestSyntax, isInside, resolveDestination, type Destination } from './destination.js'

export { checkDestSyntax }

/** The 403 names the roots, so a caller can tell where it may write. */
const outsideRoots = (destPath: string, roots: readonly string[]) =>
  new UploadError(
    'forbidden',
    `dest_path ${JSON.stringify(destPath)} is outside the upload roots (${roots.join(', ')})`,
    [{ code: 'forbidden', message: `dest_path must be inside one of the upload roots: ${roots.join(', ')}` }],
  )

const protectedPath = (destPath: string) =>
  new UploadError('forbidden', `dest_path ${JSON.stringify(destPath)} is inside the daemon's own files`, [
    { code: 'forbidden', message: "dest_path must not be inside the daemon's data directory or its token files" },
  ])

/** The roots that exist, as real paths (a root configured but missing is skipped). */
async function realRoots(roots: readonly string[]): Promise<string[]> {
  const out: string[] = []
  for (const r of roots) {
    try {
      out.push(await realpath(r))
    } catch {
      /* missing root: nothing can be inside it */
    }
  }
  return out
}

/**
 * Resolves dest_path and checks it against the roots: 400 for syntax, 403 when outside every root
 * (checked lexically first, so nothing about the filesystem outside the roots is revealed).
 */
export async function resolveUploadDestination(
  destPath: string,
  roots: readonly string[],
  protectedPaths: readonly string[] = [],
): Promise<Destination> {
  checkDestSyntax(destPath)
  const lexical = posix.normalize(destPath)
  const reals = await realRoots(roots)
  const candidates = [...roots.map(r => posix.normalize(r)), ...reals]
  if (!candidates.some(root => isInside(root, lexical))) throw outsideRoots(destPath, roots)
  const guarded = [...protectedPaths.map(p => posix.resolve(p)), ...(await realRoots(protectedPaths))]
  if (isProtected(lexical, guarded, candidates)) throw protectedPath(destPath)
  const dest = await resolveDestination(lexical)
  // symlinks inside a root may point anywhere: the physical path decides
  if (!reals.some(root => isInside(root, dest.path))) throw outsideRoots(destPath, roots)
  if (isProtected(dest.path, guarded, reals)) throw protectedPath(destPath)
  return dest
}

/**
 * A path inside a protected one (the data dir under /tmp or a home root), unless a root inside that
 * protected path holds it (`<data-dir>/uploads`).
 */
function isProtected(path: string, guarded: readonly string[], roots: readonly string[]): boolean {
  return guarded.some(g => isInside(g, path) && !roots.some(r => isInside(g, r) && isInside(r, path)))
}

/** Where the browser's user writes: its home, the downloads folder in it, and /tmp. */
export function browserUserRoots(home: string | undefined): string[] {
  const out: string[] = []
  if (home && posix.isAbsolute(home) && posix.normalize(home) !== '/') {
    const h = posix.normalize(home)
    out.push(h, posix.join(h, 'Downloads'))
  }
  out.push('/tmp')
  return out
}

/**
 * The roots to use: those configured, else `<data-dir>/uploads` (created) and, of where the
 * browser's user writes (browserUserRoots of its home: the ordinary VM paths an SDK caller names),
 * the directories that exist.
 */
export async function prepareUploadRoots(
  configured: readonly string[],
  dataDir: string,
  browserHome?: string,
): Promise<string[]> {
  if (configured.length > 0) return configured.map(r => posix.resolve(r))
  const root = posix.resolve(dataDir, 'uploads')
  await mkdir(root, { recursive: true })
  // A browser user without a home (nobody's /nonexistent) adds none: the 403 names only real places.
  const existing: string[] = []
  for (const r of browserUserRoots(browserHome)) {
    if (r !== root && (await stat(r).catch(() => undefined))?.isDirectory()) existing.push(r)
  }
  return [root, ...existing]
}
