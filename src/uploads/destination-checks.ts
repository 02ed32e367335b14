// Checks of an archive against its destination before anything is written: free space and inodes,
// what already exists at each path (files, directories, links that would lead outside), and the
// targets of symbolic links. Every refusal is an UploadError naming the entry.
import { lstat, realpath, stat, statfs } from 'node:fs/promises'
import { posix } from 'node:path'
import type yauzl from 'yauzl'
import { insufficientStorage, unsafeEntry } from './errors.js'
import { isInside, isMissing, type Destination } from './destination.js'
import {
  MAX_LINK_TARGET_BYTES,
  MAX_NAME_DEPTH,
  readSmallEntry,
  type ZipEntries,
  type ZipEntryInfo,
} from './zip-entries.js'

/**
 * Refuses (507) before writing when the filesystem cannot hold the declared uncompressed size
 * (rounded up to whole blocks, plus a block per directory) or has fewer free inodes than paths.
 */
export async function checkFreeSpace(anchor: string, entries: ZipEntries): Promise<void> {
  const fs = await statfs(anchor)
  const block = fs.bsize > 0 ? fs.bsize : 4096
  let need = entries.dirs.length * block
  for (const e of entries.list) if (e.kind === 'file') need += Math.ceil(e.entry.uncompressedSize / block) * block
  const free = fs.bavail * block
  if (need > free)
    throw insufficientStorage(`the archive needs ${need} bytes; the destination filesystem has ${free} free`)
  const inodes = entries.list.length + entries.dirs.length
  // filesystems without inode accounting (some report 0 files in total) are not held to it
  if (fs.files > 0 && inodes > fs.ffree)
    throw insufficientStorage(
      `the archive creates ${inodes} paths; the destination filesystem has ${fs.ffree} free inodes`,
    )
}

// ---------------------------------------------------------------------------------------------
// Destination checks (first pass, nothing written)

type Existing =
  | { kind: 'missing' }
  | { kind: 'dir' }
  | { kind: 'file' }
  | { kind: 'other' }
  | { kind: 'symlink'; inside: boolean; toDir: boolean }

/** Cached lstat view of what already exists under the destination. */
export class ExistingTree {
  private cache = new Map<string, Existing>()
  constructor(readonly dest: Destination) {}

  async lookup(rel: string): Promise<Existing> {
    if (!this.dest.exists) return { kind: 'missing' }
    const hit = this.cache.get(rel)
    if (hit) return hit
    const slash = rel.lastIndexOf('/')
    let result: Existing | undefined
    if (slash > 0) {
      const parent = await this.lookup(rel.slice(0, slash))
      if (parent.kind === 'missing') result = parent
    }
    if (!result) result = await this.probe(posix.join(this.dest.path, rel))
    this.cache.set(rel, result)
    return result
  }

  private async probe(abs: string): Promise<Existing> {
    let st
    try {
      st = await lstat(abs)
    } catch (err) {
      if (isMissing(err)) return { kind: 'missing' }
      throw err
    }
    if (st.isDirectory()) return { kind: 'dir' }
    if (st.isFile()) return { kind: 'file' }
    if (!st.isSymbolicLink()) return { kind: 'other' }
    try {
      const real = await realpath(abs)
      return { kind: 'symlink', inside: isInside(this.dest.path, real), toDir: (await stat(real)).isDirectory() }
    } catch {
      return { kind: 'symlink', inside: false, toDir: false } // dangling: treat as leaving, never write through it
    }
  }
}

/**
 * Checks every entry against the existing destination and returns the validated symlink targets.
 * Directories first, parents before children (each looked up once, and nothing below a missing one),
 * then each non-directory entry once: linear in the number of paths.
 */
export async function checkAgainstDestination(
  zip: yauzl.ZipFile,
  entries: ZipEntries,
  existing: ExistingTree,
): Promise<Map<string, string>> {
  for (const dir of entries.dirs) {
    const st = await existing.lookup(dir.path)
    if (st.kind === 'missing' || st.kind === 'dir' || (st.kind === 'symlink' && st.inside && st.toDir)) continue
    if (dir.info) {
      if (st.kind === 'symlink' && !st.inside)
        throw unsafeEntry(dir.info.rawName, 'the destination has a symlink here that leaves the destination')
      throw unsafeEntry(dir.info.rawName, 'a non-directory with this name exists in the destination')
    }
    if (st.kind === 'symlink' && !st.inside)
      throw unsafeEntry(
        dir.via.rawName,
        `lies under the existing symlink ${JSON.stringify(dir.path)}, which leaves the destination`,
      )
    throw unsafeEntry(dir.via.rawName, `${JSON.stringify(dir.path)} exists in the destination and is not a directory`)
  }
  const archiveLinks = new Set(entries.list.filter(e => e.kind === 'symlink').map(e => e.path))
  const targets = new Map<string, string>()
  for (const info of entries.list) {
    if (info.kind === 'dir') continue
    const self = await existing.lookup(info.path)
    if (self.kind === 'dir' || self.kind === 'other') {
      throw unsafeEntry(
        info.rawName,
        `would replace an existing ${self.kind === 'dir' ? 'directory' : 'special file'} in the destination`,
      )
    }
    if (info.kind === 'symlink') {
      const target = (await readSmallEntry(zip, info, MAX_LINK_TARGET_BYTES)).toString('utf8')
      await checkLinkTarget(info, target, archiveLinks, existing)
      targets.set(info.path, target)
    }
  }
  return targets
}

/**
 * A symlink target must resolve inside the destination. Resolution is lexical, which is only sound
 * when ".." is never applied to a symlink (link/.. is the link target's parent, not the link's), so
 * that case is refused outright; every existing symlink passed through must itself stay inside.
 */
export async function checkLinkTarget(
  info: ZipEntryInfo,
  target: string,
  archiveLinks: Set<string>,
  existing: ExistingTree,
): Promise<void> {
  if (target.length === 0 || target.includes('\0'))
    throw unsafeEntry(info.rawName, 'empty or NUL-containing symlink target')
  const dest = existing.dest.path
  let stack: string[]
  let parts: string[]
  if (target.startsWith('/')) {
    const abs = posix.normalize(target)
    if (!isInside(dest, abs))
      throw unsafeEntry(info.rawName, `symlink target ${JSON.stringify(target)} leaves the destination`)
    stack = []
    parts = posix.relative(dest, abs).split('/')
  } else {
    stack = info.path.split('/').slice(0, -1)
    parts = target.split('/')
  }
  if (parts.length > 2 * MAX_NAME_DEPTH)
    throw unsafeEntry(info.rawName, `symlink target with more than ${2 * MAX_NAME_DEPTH} path components`)
  for (const part of parts) {
    if (part === '' || part === '.') continue
    if (part === '..') {
      if (stack.length === 0)
        throw unsafeEntry(info.rawName, `symlink target ${JSON.stringify(target)} leaves the destination`)
      const cur = stack.join('/')
      if (archiveLinks.has(cur) || (await existing.lookup(cur)).kind === 'symlink') {
        throw unsafeEntry(
          info.rawName,
          `symlink target ${JSON.stringify(target)} applies ".." to the symlink ${JSON.stringify(cur)}`,
        )
      }
      stack.pop()
    } else {
      stack.push(part)
      const st = await existing.lookup(stack.join('/'))
      if (st.kind === 'symlink' && !st.inside) {
        throw unsafeEntry(
          info.rawName,
          `symlink target ${JSON.stringify(target)} passes through the existing symlink ${JSON.stringify(stack.join('/'))}, which leaves the destination`,
        )
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Extraction into staging
