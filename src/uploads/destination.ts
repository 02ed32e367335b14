// The destination of an extraction: syntax rules for dest_path and its physical resolution.
import { lstat, realpath, stat } from 'node:fs/promises'
import { posix } from 'node:path'
import { badRequest } from './errors.js'

/** The cheap checks that need no filesystem, so a bad dest_path fails before the archive is read. */
export function checkDestSyntax(destPath: string): void {
  if (destPath.trim() === '') throw badRequest('dest_path', 'empty')
  if (!posix.isAbsolute(destPath))
    throw badRequest('dest_path', `must be an absolute path, got ${JSON.stringify(destPath)}`)
  if (destPath.includes('\0')) throw badRequest('dest_path', 'contains a NUL character')
  if (destPath.split('/').includes('..')) throw badRequest('dest_path', 'must not contain ".." components')
}

export interface Destination {
  /** The physical destination (real path of the nearest existing ancestor + the missing components). */
  path: string
  /** Whether the destination directory exists already. */
  exists: boolean
  /** Real path of the nearest existing ancestor (the destination itself when it exists). */
  anchor: string
}

export const isMissing = (err: unknown) => {
  const code = (err as NodeJS.ErrnoException).code
  return code === 'ENOENT' || code === 'ENOTDIR'
}

/**
 * Resolves an absolute destination path physically: real path of the nearest existing ancestor plus
 * the components that do not exist yet. Rejects ".." components, non-directories and dangling links.
 */
export async function resolveDestination(destPath: string): Promise<Destination> {
  checkDestSyntax(destPath)
  const missing: string[] = []
  let cur = posix.normalize(destPath)
  for (;;) {
    let real: string | undefined
    try {
      real = await realpath(cur)
    } catch (err) {
      if (!isMissing(err)) throw err
      // realpath fails on a dangling symlink too; refuse rather than create its target by accident
      if (
        await lstat(cur).then(
          () => true,
          () => false,
        )
      )
        throw badRequest('dest_path', `${cur} is a dangling symlink`)
    }
    if (real !== undefined) {
      const st = await stat(real)
      if (!st.isDirectory()) throw badRequest('dest_path', `${cur} exists and is not a directory`)
      return { path: posix.join(real, ...missing), exists: missing.length === 0, anchor: real }
    }
    if (cur === '/') throw badRequest('dest_path', 'no existing ancestor')
    missing.unshift(posix.basename(cur))
    cur = posix.dirname(cur)
  }
}

export const isInside = (root: string, p: string) => p === root || p.startsWith(root === '/' ? '/' : root + '/')
