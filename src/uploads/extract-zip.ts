// Safe zip extraction: validate everything first, extract into a staging directory on the same
// filesystem, then move into place with an undo log so a failure at any point leaves the
// destination exactly as it was. The archive is read with random access (yauzl), never whole.
import { closeSync, constants as fsc, createWriteStream, fchmodSync, openSync, readSync, writeSync } from 'node:fs'
import {
  chmod,
  lstat,
  mkdir,
  open,
  realpath,
  rm,
  stat,
  statfs,
  symlink,
  writeFile,
  type FileHandle,
} from 'node:fs/promises'
import { randomBytes } from 'node:crypto'
import { posix } from 'node:path'
import { Readable, Transform, type TransformCallback } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { crc32, createInflateRaw, inflateRawSync } from 'node:zlib'
import { performance } from 'node:perf_hooks'
import type yauzl from 'yauzl'
import { insufficientStorage, invalidZip, unsafeEntry, UploadError } from './errors.js'
import { isInside, isMissing, resolveDestination, type Destination } from './destination.js'
import {
  checkCrc,
  DEFAULT_ZIP_LIMITS,
  MAX_LINK_TARGET_BYTES,
  MAX_NAME_DEPTH,
  openZip,
  readSmallEntry,
  readZipEntries,
  type ZipEntries,
  type ZipEntryInfo,
  type ZipLimits,
} from './zip-entries.js'
import {
  applyMerge,
  finishMerge,
  planMerge,
  rollbackMerge,
  settleJournal,
  STAGING_PREFIX,
  writeJournal,
} from './merge-journal.js'

/** Entries at most this big (compressed and uncompressed) are extracted in one piece, synchronously; bigger ones stream. */
const WHOLE_MAX_BYTES = 4 * 1024 * 1024
/** Longest run of synchronous extraction work before yielding to the event loop. */
const SLICE_MS = 10
/** Read once: calling process.umask() without an argument is deprecated for repeated use. */
const UMASK = process.umask()

export interface ExtractResult {
  files: number
  dirs: number
  symlinks: number
  bytes: number
}

export interface ExtractOptions {
  /**
   * Directory for the crash records: a marker naming the staging directory while it exists, and the
   * merge journal while the tree moves into place (sweepSpool recovers and removes both at startup).
   * Without it a crash can leave staging behind and a merge half done.
   */
  markerDir?: string
}

export { STAGING_PREFIX }
export const STAGING_MARKER_PREFIX = '.staging-'

/** File modes keep at most rwxr-xr-x: nothing an archive says makes a file group- or world-writable. */
const FILE_MODE_MASK = 0o755
const DEFAULT_FILE_MODE = 0o644
const DIR_MODE = 0o755

/**
 * Extracts archivePath into destPath (absolute; created if missing). Throws UploadError
 * (invalid_zip / unsafe_entry) before writing anything when the archive is hostile or corrupt.
 */
export async function extractZip(
  archivePath: string,
  destPath: string,
  limits: ZipLimits = DEFAULT_ZIP_LIMITS,
  opts: ExtractOptions = {},
): Promise<ExtractResult> {
  const dest = await resolveDestination(destPath)
  const zip = await openZip(archivePath)
  try {
    const entries = await readZipEntries(zip, limits)
    const existing = new ExistingTree(dest)
    const linkTargets = await checkAgainstDestination(zip, entries, existing)
    await checkFreeSpace(dest.anchor, entries)
    const staging = posix.join(dest.anchor, `${STAGING_PREFIX}${randomBytes(6).toString('hex')}`)
    // recorded first, so a crash between here and the cleanup below leaves a marker that sweepSpool follows
    const marker = opts.markerDir
      ? posix.join(opts.markerDir, `${STAGING_MARKER_PREFIX}${posix.basename(staging)}`)
      : undefined
    try {
      if (marker) await writeFile(marker, staging, { mode: 0o600 })
      await mkdir(staging, { mode: 0o700 })
      const move = { stuck: false }
      try {
        const tree = posix.join(staging, 'tree')
        const result = await writeTree(archivePath, entries, tree, linkTargets)
        await moveIntoPlace(tree, staging, dest, opts.markerDir, move)
        return result
      } finally {
        // a merge that could not be undone keeps its staging for the recovery at the next start
        if (!move.stuck) {
          await rm(staging, { recursive: true, force: true })
          if (marker) await rm(marker, { force: true })
        }
      }
    } catch (err) {
      throw storageError(err) ?? err
    }
  } finally {
    zip.close()
  }
}

/** A full disk (or quota) is the server's condition, not the archive's: 507 insufficient_storage. */
function storageError(err: unknown): UploadError | undefined {
  const code = (err as NodeJS.ErrnoException).code
  if (code === 'ENOSPC' || code === 'EDQUOT')
    return insufficientStorage('the disk filled up during extraction; nothing was changed')
  // names are capped per component and in total, but the destination's own path adds to them
  if (code === 'ENAMETOOLONG') {
    const message = 'an entry path is too long at this destination (PATH_MAX); nothing was changed'
    return new UploadError('unsafe_entry', message, [{ code: 'unsafe_entry', message }])
  }
  return undefined
}

/**
 * Refuses (507) before writing when the filesystem cannot hold the declared uncompressed size
 * (rounded up to whole blocks, plus a block per directory) or has fewer free inodes than paths.
 */
async function checkFreeSpace(anchor: string, entries: ZipEntries): Promise<void> {
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
class ExistingTree {
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
async function checkAgainstDestination(
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
async function checkLinkTarget(
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

async function writeTree(
  archivePath: string,
  entries: ZipEntries,
  tree: string,
  linkTargets: Map<string, string>,
): Promise<ExtractResult> {
  await mkdir(tree, { mode: DIR_MODE })
  // every directory, explicit or implied by a deeper entry, parents first
  for (const d of entries.dirs) await mkdir(posix.join(tree, d.path), { mode: DIR_MODE })

  const files = entries.list.filter(e => e.kind === 'file')
  const archive = await open(archivePath, 'r')
  const scratch = new Scratch()
  let bytes = 0
  try {
    let sliceStart = performance.now()
    for (const info of files) {
      bytes += await extractFile(archive, info, posix.join(tree, info.path), scratch)
      if (performance.now() - sliceStart > SLICE_MS) {
        await new Promise<void>(resolve => setImmediate(resolve))
        sliceStart = performance.now()
      }
    }
  } finally {
    await archive.close()
  }
  for (const e of entries.list)
    if (e.kind === 'symlink') await symlink(linkTargets.get(e.path)!, posix.join(tree, e.path))
  // explicit directory modes last (deepest first), never group/world-writable, always owner rwx so the tree stays movable and removable
  for (let i = entries.dirs.length - 1; i >= 0; i--) {
    const { path, info } = entries.dirs[i]!
    if (info?.mode !== undefined) await chmod(posix.join(tree, path), (info.mode & FILE_MODE_MASK) | 0o700)
  }
  return { files: files.length, dirs: entries.dirs.length, symlinks: linkTargets.size, bytes }
}

/** Writes one file entry, verifying CRC-32 and exact size; returns the bytes written. */
async function extractFile(archive: FileHandle, info: ZipEntryInfo, target: string, scratch: Scratch): Promise<number> {
  const { entry } = info
  const mode = (info.mode ?? DEFAULT_FILE_MODE) & FILE_MODE_MASK
  try {
    if (entry.compressedSize <= WHOLE_MAX_BYTES && entry.uncompressedSize <= WHOLE_MAX_BYTES) {
      extractSmallSync(archive.fd, info, target, mode, scratch)
      return entry.uncompressedSize
    }
    // not yauzl's stream: it reads 16 KiB at a time and inflates into 16 KiB chunks, each a pool round trip
    const source = Readable.from(compressedChunks(archive, info), { objectMode: false })
    const sink = createWriteStream(target, { flags: 'wx', mode, highWaterMark: 1024 * 1024 })
    if (entry.compressionMethod === 8)
      await pipeline(source, createInflateRaw({ chunkSize: 256 * 1024 }), new CrcCheck(info), sink)
    else await pipeline(source, new CrcCheck(info), sink)
  } catch (err) {
    if (err instanceof UploadError) throw err
    const code = (err as NodeJS.ErrnoException).code
    if (typeof code === 'string' && code.startsWith('E') && !code.startsWith('ERR_')) throw err // filesystem trouble: not the archive's fault
    throw invalidZip(`corrupt data: ${(err as Error).message}`, info.rawName)
  }
  // umask may have cleared bits the archive asks for; the archive's bits win (within FILE_MODE_MASK)
  if (info.mode !== undefined && (mode & UMASK) !== 0) await chmod(target, mode)
  return entry.uncompressedSize
}

/** A read buffer reused across small entries (they are extracted one at a time). */
class Scratch {
  private buf = Buffer.allocUnsafe(64 * 1024)
  get(size: number): Buffer {
    if (this.buf.length < size) this.buf = Buffer.allocUnsafe(Math.max(size, this.buf.length * 2))
    return this.buf
  }
}

function readFullySync(fd: number, buf: Buffer, length: number, position: number, info: ZipEntryInfo): void {
  let got = 0
  while (got < length) {
    const n = readSync(fd, buf, got, length - got, position + got)
    if (n === 0) throw invalidZip('entry data runs past the end of the archive', info.rawName)
    got += n
  }
}

/** Parses the local header at the start of buf and returns where the entry's data begins. */
function localDataStart(buf: Buffer, bytesRead: number, info: ZipEntryInfo): number {
  if (bytesRead < 30 || buf.readUInt32LE(0) !== LOCAL_HEADER_SIGNATURE)
    throw invalidZip('missing or corrupt local file header', info.rawName)
  return 30 + buf.readUInt16LE(26) + buf.readUInt16LE(28)
}

/**
 * Small entries synchronously, like unzip: one read (header + data), inflate bounded by the declared
 * size, CRC check, open/write/close. Each libuv pool round trip costs a cross-thread wakeup, which is
 * what dominated extraction time (especially in VMs); the caller yields to the event loop every few ms.
 */
function extractSmallSync(fd: number, info: ZipEntryInfo, target: string, mode: number, scratch: Scratch): void {
  const { entry } = info
  const want = LOCAL_HEADER_SLACK + entry.fileNameLength + entry.compressedSize
  let buf = scratch.get(want)
  const got = readSync(fd, buf, 0, want, entry.relativeOffsetOfLocalHeader)
  const dataStart = localDataStart(buf, got, info)
  let data: Buffer
  if (dataStart + entry.compressedSize <= got) {
    data = buf.subarray(dataStart, dataStart + entry.compressedSize)
  } else {
    // a long local extra field: read the data on its own
    buf = scratch.get(entry.compressedSize)
    readFullySync(fd, buf, entry.compressedSize, entry.relativeOffsetOfLocalHeader + dataStart, info)
    data = buf.subarray(0, entry.compressedSize)
  }
  const out =
    entry.compressionMethod === 8
      ? inflateRawSync(data, { maxOutputLength: Math.max(1, entry.uncompressedSize) })
      : data
  if (out.length !== entry.uncompressedSize)
    throw invalidZip(`declared ${entry.uncompressedSize} bytes but holds ${out.length}`, info.rawName)
  checkCrc(info, out)
  const wfd = openSync(target, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL, mode)
  try {
    let off = 0
    while (off < out.length) off += writeSync(wfd, out, off, out.length - off)
    // umask may have cleared bits the archive asks for; the archive's bits win (within FILE_MODE_MASK)
    if (info.mode !== undefined && (mode & UMASK) !== 0) fchmodSync(wfd, mode)
  } finally {
    closeSync(wfd)
  }
}

const LOCAL_HEADER_SIGNATURE = 0x04034b50
/** Room guessed for the local header's name and extra field, so one read usually covers header and data. */
const LOCAL_HEADER_SLACK = 30 + 1024
/** Read size for streamed entries: few, large reads (each read is a libuv pool round trip). */
const READ_CHUNK = 1024 * 1024

/**
 * The compressed bytes of an entry, straight from the archive: the first read covers the local
 * header (whose name/extra lengths may differ from the central directory's) and the start of the data.
 */
async function* compressedChunks(archive: FileHandle, info: ZipEntryInfo): AsyncGenerator<Buffer> {
  const { entry } = info
  let remaining = entry.compressedSize
  const head = Buffer.allocUnsafe(Math.min(READ_CHUNK, LOCAL_HEADER_SLACK + entry.fileNameLength + remaining))
  const { bytesRead } = await archive.read(head, 0, head.length, entry.relativeOffsetOfLocalHeader)
  const dataStart = localDataStart(head, bytesRead, info)
  let pos = entry.relativeOffsetOfLocalHeader + dataStart
  if (dataStart < bytesRead && remaining > 0) {
    const first = head.subarray(dataStart, Math.min(bytesRead, dataStart + remaining))
    remaining -= first.length
    pos += first.length
    yield first
  }
  while (remaining > 0) {
    const buf = Buffer.allocUnsafe(Math.min(READ_CHUNK, remaining))
    const r = await archive.read(buf, 0, buf.length, pos)
    if (r.bytesRead === 0) throw invalidZip('entry data runs past the end of the archive', info.rawName)
    remaining -= r.bytesRead
    pos += r.bytesRead
    yield r.bytesRead === buf.length ? buf : buf.subarray(0, r.bytesRead)
  }
}

/** Passes data through while checking it never exceeds the declared size and matches the CRC-32. */
class CrcCheck extends Transform {
  private crc = 0
  private n = 0
  constructor(private info: ZipEntryInfo) {
    super()
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.n += chunk.length
    if (this.n > this.info.entry.uncompressedSize)
      return cb(invalidZip(`holds more than the declared ${this.info.entry.uncompressedSize} bytes`, this.info.rawName))
    this.crc = crc32(chunk, this.crc)
    cb(null, chunk)
  }
  override _flush(cb: TransformCallback): void {
    if (this.n !== this.info.entry.uncompressedSize)
      return cb(invalidZip(`declared ${this.info.entry.uncompressedSize} bytes but holds ${this.n}`, this.info.rawName))
    try {
      checkCrc(this.info, Buffer.alloc(0), this.crc)
    } catch (err) {
      return cb(err as Error)
    }
    cb()
  }
}

// ---------------------------------------------------------------------------------------------
// Move into place, all or nothing (merge-journal.ts)

/**
 * Plans the moves, journals them durably in journalDir (when given), performs them, and commits; on
 * any failure the moves done so far are undone. A crash anywhere in between is settled by
 * recoverMerges at the next start. Replaced files sit in a backup directory until the commit.
 */
async function moveIntoPlace(
  tree: string,
  staging: string,
  dest: Destination,
  journalDir: string | undefined,
  state: { stuck: boolean },
): Promise<void> {
  const plan = await planMerge(tree, staging, dest)
  let journal = journalDir ? await writeJournal(journalDir, plan) : undefined
  try {
    await applyMerge(plan)
  } catch (err) {
    try {
      await rollbackMerge(plan)
      if (journal) journal = await settleJournal(journal)
    } catch {
      // the journal stays pending and staging stays: the next start rolls the merge back
      state.stuck = journal !== undefined
      throw err
    }
    await finishMerge(plan, journal)
    throw err
  }
  if (journal) journal = await settleJournal(journal)
  await finishMerge(plan, journal)
}
