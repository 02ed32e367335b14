// Safe zip extraction: validate everything first, extract into a staging directory on the same
// filesystem, then move into place with an undo log so a failure at any point leaves the
// destination exactly as it was. The archive is read with random access (yauzl), never whole.
import { closeSync, constants as fsc, createWriteStream, fchmodSync, openSync, readSync, writeSync } from 'node:fs'
import { chmod, lstat, mkdir, open, readdir, realpath, rename, rm, rmdir, stat, symlink, writeFile, type FileHandle } from 'node:fs/promises'
import { randomBytes } from 'node:crypto'
import { posix } from 'node:path'
import { Readable, Transform, type TransformCallback } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { crc32, createInflateRaw, inflateRawSync } from 'node:zlib'
import { performance } from 'node:perf_hooks'
import type yauzl from 'yauzl'
import { invalidZip, unsafeEntry, UploadError } from './errors.js'
import { isInside, isMissing, resolveDestination, type Destination } from './destination.js'
import {
  checkCrc, DEFAULT_ZIP_LIMITS, MAX_LINK_TARGET_BYTES, openZip, readSmallEntry, readZipEntries,
  type ZipEntryInfo, type ZipLimits,
} from './zip-entries.js'

/** Entries at most this big (compressed and uncompressed) are extracted in one piece, synchronously; bigger ones stream. */
const WHOLE_MAX_BYTES = 4 * 1024 * 1024
/** Longest run of synchronous extraction work before yielding to the event loop. */
const SLICE_MS = 10
/** Read once: calling process.umask() without an argument is deprecated for repeated use. */
const UMASK = process.umask()

export interface ExtractResult { files: number; dirs: number; symlinks: number; bytes: number }

export interface ExtractOptions {
  /** Directory for a marker naming the staging directory while it exists (sweepSpool removes leftovers after a crash). */
  markerDir?: string
}

export const STAGING_PREFIX = '.upload-staging-'
export const STAGING_MARKER_PREFIX = '.staging-'

/**
 * Extracts archivePath into destPath (absolute; created if missing). Throws UploadError
 * (invalid_zip / unsafe_entry) before writing anything when the archive is hostile or corrupt.
 */
export async function extractZip(archivePath: string, destPath: string, limits: ZipLimits = DEFAULT_ZIP_LIMITS, opts: ExtractOptions = {}): Promise<ExtractResult> {
  const dest = await resolveDestination(destPath)
  const zip = await openZip(archivePath)
  try {
    const entries = await readZipEntries(zip, limits)
    const existing = new ExistingTree(dest)
    const linkTargets = await checkAgainstDestination(zip, entries, existing)
    const staging = posix.join(dest.anchor, `${STAGING_PREFIX}${randomBytes(6).toString('hex')}`)
    // recorded first, so a crash between here and the cleanup below leaves a marker that sweepSpool follows
    const marker = opts.markerDir ? posix.join(opts.markerDir, `${STAGING_MARKER_PREFIX}${posix.basename(staging)}`) : undefined
    if (marker) await writeFile(marker, staging, { mode: 0o600 })
    await mkdir(staging, { mode: 0o700 })
    try {
      const tree = posix.join(staging, 'tree')
      const result = await writeTree(archivePath, entries, tree, linkTargets)
      await moveIntoPlace(tree, dest, posix.join(staging, 'backup'))
      return result
    } finally {
      await rm(staging, { recursive: true, force: true })
      if (marker) await rm(marker, { force: true })
    }
  } finally {
    zip.close()
  }
}

// ---------------------------------------------------------------------------------------------
// Destination checks (first pass, nothing written)

type Existing =
  | { kind: 'missing' } | { kind: 'dir' } | { kind: 'file' } | { kind: 'other' }
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
    try { st = await lstat(abs) } catch (err) { if (isMissing(err)) return { kind: 'missing' }; throw err }
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

/** Checks every entry against the existing destination and returns the validated symlink targets. */
async function checkAgainstDestination(zip: yauzl.ZipFile, entries: ZipEntryInfo[], existing: ExistingTree): Promise<Map<string, string>> {
  const checkedDirs = new Set<string>()
  const archiveLinks = new Set(entries.filter((e) => e.kind === 'symlink').map((e) => e.path))
  const targets = new Map<string, string>()
  for (const info of entries) {
    // every ancestor must be (or resolve to) a directory inside the destination
    const parts = info.path.split('/')
    for (let i = 1; i < parts.length; i++) {
      const prefix = parts.slice(0, i).join('/')
      if (checkedDirs.has(prefix)) continue
      const st = await existing.lookup(prefix)
      if (st.kind === 'missing') break
      if (st.kind === 'symlink' && !st.inside) throw unsafeEntry(info.rawName, `lies under the existing symlink ${JSON.stringify(prefix)}, which leaves the destination`)
      if (st.kind !== 'dir' && !(st.kind === 'symlink' && st.toDir)) throw unsafeEntry(info.rawName, `${JSON.stringify(prefix)} exists in the destination and is not a directory`)
      checkedDirs.add(prefix)
    }
    const self = await existing.lookup(info.path)
    if (info.kind === 'dir') {
      if (self.kind === 'symlink' && !self.inside) throw unsafeEntry(info.rawName, 'the destination has a symlink here that leaves the destination')
      if (self.kind === 'file' || self.kind === 'other' || (self.kind === 'symlink' && !self.toDir)) throw unsafeEntry(info.rawName, 'a non-directory with this name exists in the destination')
    } else if (self.kind === 'dir' || self.kind === 'other') {
      throw unsafeEntry(info.rawName, `would replace an existing ${self.kind === 'dir' ? 'directory' : 'special file'} in the destination`)
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
async function checkLinkTarget(info: ZipEntryInfo, target: string, archiveLinks: Set<string>, existing: ExistingTree): Promise<void> {
  if (target.length === 0 || target.includes('\0')) throw unsafeEntry(info.rawName, 'empty or NUL-containing symlink target')
  const dest = existing.dest.path
  let stack: string[]
  let parts: string[]
  if (target.startsWith('/')) {
    const abs = posix.normalize(target)
    if (!isInside(dest, abs)) throw unsafeEntry(info.rawName, `symlink target ${JSON.stringify(target)} leaves the destination`)
    stack = []
    parts = posix.relative(dest, abs).split('/')
  } else {
    stack = info.path.split('/').slice(0, -1)
    parts = target.split('/')
  }
  for (const part of parts) {
    if (part === '' || part === '.') continue
    if (part === '..') {
      if (stack.length === 0) throw unsafeEntry(info.rawName, `symlink target ${JSON.stringify(target)} leaves the destination`)
      const cur = stack.join('/')
      if (archiveLinks.has(cur) || (await existing.lookup(cur)).kind === 'symlink') {
        throw unsafeEntry(info.rawName, `symlink target ${JSON.stringify(target)} applies ".." to the symlink ${JSON.stringify(cur)}`)
      }
      stack.pop()
    } else {
      stack.push(part)
      const st = await existing.lookup(stack.join('/'))
      if (st.kind === 'symlink' && !st.inside) {
        throw unsafeEntry(info.rawName, `symlink target ${JSON.stringify(target)} passes through the existing symlink ${JSON.stringify(stack.join('/'))}, which leaves the destination`)
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Extraction into staging

async function writeTree(archivePath: string, entries: ZipEntryInfo[], tree: string, linkTargets: Map<string, string>): Promise<ExtractResult> {
  await mkdir(tree)
  // every directory, explicit or implied by a deeper entry, parents first
  const dirs = new Set<string>()
  for (const e of entries) {
    const parts = e.path.split('/')
    for (let i = 1; i < parts.length; i++) dirs.add(parts.slice(0, i).join('/'))
    if (e.kind === 'dir') dirs.add(e.path)
  }
  const dirList = [...dirs].sort((a, b) => a.split('/').length - b.split('/').length)
  for (const d of dirList) await mkdir(posix.join(tree, d))

  const files = entries.filter((e) => e.kind === 'file')
  const archive = await open(archivePath, 'r')
  const scratch = new Scratch()
  let bytes = 0
  try {
    let sliceStart = performance.now()
    for (const info of files) {
      bytes += await extractFile(archive, info, posix.join(tree, info.path), scratch)
      if (performance.now() - sliceStart > SLICE_MS) {
        await new Promise<void>((resolve) => setImmediate(resolve))
        sliceStart = performance.now()
      }
    }
  } finally {
    await archive.close()
  }
  for (const e of entries) if (e.kind === 'symlink') await symlink(linkTargets.get(e.path)!, posix.join(tree, e.path))
  // explicit directory modes last (deepest first), keeping owner rwx so the tree stays movable and removable
  for (const e of [...entries].reverse()) if (e.kind === 'dir' && e.mode !== undefined) await chmod(posix.join(tree, e.path), e.mode | 0o700)
  return { files: files.length, dirs: dirs.size, symlinks: linkTargets.size, bytes }
}

/** Writes one file entry, verifying CRC-32 and exact size; returns the bytes written. */
async function extractFile(archive: FileHandle, info: ZipEntryInfo, target: string, scratch: Scratch): Promise<number> {
  const { entry } = info
  const mode = info.mode ?? 0o666
  try {
    if (entry.compressedSize <= WHOLE_MAX_BYTES && entry.uncompressedSize <= WHOLE_MAX_BYTES) {
      extractSmallSync(archive.fd, info, target, mode, scratch)
      return entry.uncompressedSize
    }
    // not yauzl's stream: it reads 16 KiB at a time and inflates into 16 KiB chunks, each a pool round trip
    const source = Readable.from(compressedChunks(archive, info), { objectMode: false })
    const sink = createWriteStream(target, { flags: 'wx', mode, highWaterMark: 1024 * 1024 })
    if (entry.compressionMethod === 8) await pipeline(source, createInflateRaw({ chunkSize: 256 * 1024 }), new CrcCheck(info), sink)
    else await pipeline(source, new CrcCheck(info), sink)
  } catch (err) {
    if (err instanceof UploadError) throw err
    const code = (err as NodeJS.ErrnoException).code
    if (typeof code === 'string' && code.startsWith('E') && !code.startsWith('ERR_')) throw err // filesystem trouble: not the archive's fault
    throw invalidZip(`corrupt data: ${(err as Error).message}`, info.rawName)
  }
  // umask may have cleared bits the archive asks for; the archive's bits win (setuid/setgid/sticky never present)
  if (info.mode !== undefined && (info.mode & UMASK) !== 0) await chmod(target, info.mode)
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
  if (bytesRead < 30 || buf.readUInt32LE(0) !== LOCAL_HEADER_SIGNATURE) throw invalidZip('missing or corrupt local file header', info.rawName)
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
  const out = entry.compressionMethod === 8 ? inflateRawSync(data, { maxOutputLength: Math.max(1, entry.uncompressedSize) }) : data
  if (out.length !== entry.uncompressedSize) throw invalidZip(`declared ${entry.uncompressedSize} bytes but holds ${out.length}`, info.rawName)
  checkCrc(info, out)
  const wfd = openSync(target, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL, mode)
  try {
    let off = 0
    while (off < out.length) off += writeSync(wfd, out, off, out.length - off)
    // umask may have cleared bits the archive asks for; the archive's bits win (setuid/setgid/sticky never present)
    if (info.mode !== undefined && (info.mode & UMASK) !== 0) fchmodSync(wfd, info.mode)
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
  constructor(private info: ZipEntryInfo) { super() }
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.n += chunk.length
    if (this.n > this.info.entry.uncompressedSize) return cb(invalidZip(`holds more than the declared ${this.info.entry.uncompressedSize} bytes`, this.info.rawName))
    this.crc = crc32(chunk, this.crc)
    cb(null, chunk)
  }
  override _flush(cb: TransformCallback): void {
    if (this.n !== this.info.entry.uncompressedSize) return cb(invalidZip(`declared ${this.info.entry.uncompressedSize} bytes but holds ${this.n}`, this.info.rawName))
    try { checkCrc(this.info, Buffer.alloc(0), this.crc) } catch (err) { return cb(err as Error) }
    cb()
  }
}

// ---------------------------------------------------------------------------------------------
// Move into place, all or nothing

type Undo = () => Promise<void>

async function moveIntoPlace(tree: string, dest: Destination, backupDir: string): Promise<void> {
  const undo: Undo[] = []
  try {
    if (!dest.exists) {
      // create the missing parents, then one atomic rename of the whole tree
      const missing = posix.relative(dest.anchor, dest.path).split('/')
      let cur = dest.anchor
      for (const part of missing.slice(0, -1)) {
        cur = posix.join(cur, part)
        await mkdir(cur)
        const made = cur
        undo.push(() => rmdir(made))
      }
      await rename(tree, dest.path)
      return
    }
    await mkdir(backupDir)
    let backups = 0
    const merge = async (from: string, to: string): Promise<void> => {
      for (const name of (await readdir(from)).sort()) { // sorted: a deterministic order of moves
        const src = posix.join(from, name)
        const dst = posix.join(to, name)
        const srcIsDir = (await lstat(src)).isDirectory()
        let dstSt
        try { dstSt = await lstat(dst) } catch (err) { if (!isMissing(err)) throw err }
        if (!dstSt) {
          await rename(src, dst)
          undo.push(() => rename(dst, src))
        } else if (srcIsDir) {
          const dstIsDir = dstSt.isDirectory() || (dstSt.isSymbolicLink() && (await stat(dst)).isDirectory())
          if (!dstIsDir) throw new Error(`${dst} changed during extraction: it is no longer a directory`)
          await merge(src, dst)
        } else {
          if (dstSt.isDirectory()) throw new Error(`${dst} changed during extraction: it is now a directory`)
          const saved = posix.join(backupDir, String(backups++))
          await rename(dst, saved)
          undo.push(() => rename(saved, dst))
          await rename(src, dst)
          undo.push(() => rename(dst, src))
        }
      }
    }
    await merge(tree, dest.path)
  } catch (err) {
    for (const step of undo.reverse()) await step().catch(() => undefined)
    throw err
  }
}
