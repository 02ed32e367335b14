// Where upload_zip may write: dest_path must be absolute and resolve (physically, following existing
// symlinks) inside one of the configured upload roots.
import { mkdir, realpath } from 'node:fs/promises'
import { posix } from 'node:path'
import { UploadError } from './errors.js'
import { checkDestSyntax, isInside, resolveDestination, type Destination } from './destination.js'

export { checkDestSyntax }

const outsideRoots = (destPath: string) =>
  new UploadError('forbidden', `dest_path ${JSON.stringify(destPath)} is outside the upload roots`, [
    { code: 'forbidden', message: 'dest_path must be inside one of the configured --upload-root directories' },
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
export async function resolveUploadDestination(destPath: string, roots: readonly string[]): Promise<Destination> {
  checkDestSyntax(destPath)
  const lexical = posix.normalize(destPath)
  const reals = await realRoots(roots)
  const candidates = [...roots.map(r => posix.normalize(r)), ...reals]
  if (!candidates.some(root => isInside(root, lexical))) throw outsideRoots(destPath)
  const dest = await resolveDestination(lexical)
  // symlinks inside a root may point anywhere: the physical path decides
  if (!reals.some(root => isInside(root, dest.path))) throw outsideRoots(destPath)
  return dest
}

/** Creates the default root if needed; returns the roots to use. */
export async function prepareUploadRoots(configured: readonly string[], dataDir: string): Promise<string[]> {
  if (configured.length > 0) return configured.map(r => posix.resolve(r))
  const root = posix.resolve(dataDir, 'uploads')
  await mkdir(root, { recursive: true })
  return [root]
}
