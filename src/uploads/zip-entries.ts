// Reads and validates the central directory of a zip archive without decompressing anything:
// entry names, types, encryption, compression methods and the size limits. Destination-dependent
// checks (symlink targets, existing symlinks) live in extract-zip.ts.
import { closeSync, fstat, open as openFd, read as readFd, readSync } from 'node:fs'
import { promisify } from 'node:util'
import { Readable } from 'node:stream'
import { crc32 } from 'node:zlib'
import yauzl from 'yauzl'
import { DEFAULT_SETTINGS } from '../defaults.js'
import { invalidZip, unsafeEntry, UploadError } from './errors.js'

export interface ZipLimits {
  /** Most paths one archive may create: its entries plus the directories they imply. */
  maxEntries: number
  /** Largest sum of declared uncompressed sizes. */
  maxTotalBytes: number
  /** Largest uncompressed/compressed ratio, of every entry (any size) and of the whole archive. */
  maxRatio: number
}

export const DEFAULT_ZIP_LIMITS: ZipLimits = {
  maxEntries: DEFAULT_SETTINGS.zipMaxEntries,
  maxTotalBytes: DEFAULT_SETTINGS.zipMaxTotalBytes,
  maxRatio: DEFAULT_SETTINGS.zipMaxRatio,
}

/** Longest entry name in bytes (PATH_MAX). */
export const MAX_NAME_BYTES = 4096
/** Longest path component in bytes (NAME_MAX). */
export const MAX_COMPONENT_BYTES = 255
/** Most path components of one entry name. */
export const MAX_NAME_DEPTH = 64
/** Largest sum of all entry name lengths (the central directory cannot make us hold more than this in names). */
export const MAX_NAMES_TOTAL_BYTES = 64 * 1024 * 1024
/** Longest symlink target accepted (PATH_MAX). */
export const MAX_LINK_TARGET_BYTES = 4096

export type ZipEntryKind = 'file' | 'dir' | 'symlink'

export interface ZipEntryInfo {
  entry: yauzl.Entry
  /** Normalised relative path: no leading or trailing slash, no "." or empty components. */
  path: string
  /** The name as stored (after Unicode Path extra field handling), for messages. */
  rawName: string
  kind: ZipEntryKind
  /** Permission bits 0o777 from Unix external attributes (setuid/setgid/sticky already stripped); undefined if the archive has none. */
  mode?: number
}

const S_IFMT = 0o170000
const S_IFDIR = 0o040000
const S_IFREG = 0o100000
const S_IFLNK = 0o120000
// "version made by" host systems whose external attributes carry a Unix mode: Unix, OS X (Darwin).
const UNIX_HOSTS = new Set([3, 19])

/** Bytes read at once while walking the central directory. */
const WINDOW_BYTES = 1024 * 1024

/**
 * yauzl's file reader issues two pool reads per central-directory record (~60 us each, 12 s for
 * 100,000 entries). This reader serves small reads from a 1 MiB window filled with one synchronous
 * read, and streams (entry data) straight from the file descriptor.
 */
class WindowedReader extends yauzl.RandomAccessReader {
  private window = Buffer.alloc(0)
  private windowStart = 0
  private reads = 0
  constructor(
    private readonly fd: number,
    private readonly fileSize: number,
  ) {
    super()
  }

  override read(
    buffer: Buffer,
    offset: number,
    length: number,
    position: number,
    callback: (err: Error | null) => void,
  ): void {
    let error: Error | null = null
    try {
      if (length > WINDOW_BYTES) {
        readFully(this.fd, buffer, offset, length, position)
      } else {
        if (position < this.windowStart || position + length > this.windowStart + this.window.length) {
          const size = Math.min(WINDOW_BYTES, this.fileSize - position)
          if (size < length) throw new Error('unexpected EOF')
          this.window = Buffer.allocUnsafe(size)
          readFully(this.fd, this.window, 0, size, position)
          this.windowStart = position
        }
        this.window.copy(buffer, offset, position - this.windowStart, position - this.windowStart + length)
      }
    } catch (err) {
      error = err as Error
    }
    // asynchronous like any reader (yauzl recurses through callbacks); yield to the event loop now and then
    if (++this.reads % 256 === 0) setImmediate(callback, error)
    else queueMicrotask(() => callback(error))
  }

  /** Not fs.createReadStream: destroying one closes the shared descriptor whatever autoClose says. */
  override _readStreamForRange(start: number, end: number): Readable {
    const fd = this.fd
    let pos = start
    return new Readable({
      highWaterMark: 256 * 1024,
      read(size) {
        const n = Math.min(size, end - pos)
        if (n <= 0) {
          this.push(null)
          return
        }
        const buf = Buffer.allocUnsafe(n)
        readFd(fd, buf, 0, n, pos, (err, bytesRead) => {
          if (err) return this.destroy(err)
          if (bytesRead === 0) return this.destroy(new Error('unexpected EOF'))
          pos += bytesRead
          this.push(bytesRead < n ? buf.subarray(0, bytesRead) : buf)
        })
      },
    })
  }

  override close(callback: (err: Error | null) => void): void {
    let error: Error | null = null
    try {
      closeSync(this.fd)
    } catch (err) {
      error = err as Error
    }
    setImmediate(callback, error)
  }
}

function readFully(fd: number, buf: Buffer, offset: number, length: number, position: number): void {
  let got = 0
  while (got < length) {
    const n = readSync(fd, buf, offset + got, length - got, position + got)
    if (n === 0) throw new Error('unexpected EOF')
    got += n
  }
}

export async function openZip(archivePath: string): Promise<yauzl.ZipFile> {
  // a plain descriptor, not a FileHandle (which would be closed when garbage-collected)
  const fd = await promisify(openFd)(archivePath, 'r')
  let size: number
  try {
    size = (await promisify(fstat)(fd)).size
  } catch (err) {
    closeSync(fd)
    throw err
  }
  // the reader owns the descriptor from here on: zip.close() closes it
  const reader = new WindowedReader(fd, size)
  return new Promise((resolve, reject) => {
    // decodeStrings: false so yauzl does not reject bad names itself: we want our own error naming the entry.
    yauzl.fromRandomAccessReader(
      reader,
      size,
      { lazyEntries: true, autoClose: false, decodeStrings: false, validateEntrySizes: true },
      (err, zip) => {
        if (err || !zip) {
          try {
            closeSync(fd)
          } catch {
            /* already closed */
          }
          reject(invalidZip(`not a readable zip archive: ${err?.message ?? 'unknown error'}`))
        } else resolve(zip)
      },
    )
  })
}

/** Splits and checks one entry name; returns the normalised path ('' for the root itself). */
export function normaliseEntryName(name: string): string {
  return normalisedParts(checkedName(name)).join('/')
}

/** The components of a checked name, without "." and empty ones; refuses ".." and more than MAX_NAME_DEPTH. */
function normalisedParts(name: string): string[] {
  const parts: string[] = []
  for (const part of name.split('/')) {
    if (part === '' || part === '.') continue
    if (part === '..') throw unsafeEntry(name, '".." path component leaves the destination')
    if (parts.length === MAX_NAME_DEPTH) throw unsafeEntry(name, `more than ${MAX_NAME_DEPTH} path components`)
    if (part.length > MAX_COMPONENT_BYTES / 3 && Buffer.byteLength(part) > MAX_COMPONENT_BYTES)
      throw unsafeEntry(name, `a path component longer than ${MAX_COMPONENT_BYTES} bytes`)
    parts.push(part)
  }
  return parts
}

function classify(entry: yauzl.Entry, rawName: string): { kind: ZipEntryKind; mode?: number } {
  const host = entry.versionMadeBy >>> 8
  const unixMode = UNIX_HOSTS.has(host) ? (entry.externalFileAttributes >>> 16) & 0xffff : 0
  const type = unixMode & S_IFMT
  const mode = unixMode !== 0 ? unixMode & 0o777 : undefined
  // MS-DOS attribute 0x10 marks directories in archives made on Windows
  const dosDir = unixMode === 0 && (entry.externalFileAttributes & 0x10) !== 0
  if (rawName.endsWith('/') || type === S_IFDIR || dosDir) return { kind: 'dir', mode }
  if (type === S_IFLNK) return { kind: 'symlink', mode }
  if (type === 0 || type === S_IFREG) return { kind: 'file', mode }
  throw unsafeEntry(rawName, `special file type 0o${type.toString(8)} (devices, FIFOs and sockets are not extracted)`)
}

/** A directory in the archive's path tree: explicit (an entry of its own) or implied by deeper entries. */
interface DirNode {
  children: Map<string, DirNode | ZipEntryInfo>
  /** The directory entry itself, when the archive has one. */
  info?: ZipEntryInfo
  /** The first entry that lies under it (named in errors about it). */
  via: ZipEntryInfo
}

export interface ZipEntries {
  /** Every entry except the root itself, in archive order. */
  list: ZipEntryInfo[]
  /** Every directory to create (explicit or implied), parents before children, with the entry that names or implies it. */
  dirs: { path: string; info?: ZipEntryInfo; via: ZipEntryInfo }[]
}

const isDirNode = (n: DirNode | ZipEntryInfo): n is DirNode => (n as DirNode).children !== undefined

/**
 * Reads the whole central directory and validates every entry against the limits and the rules that
 * need no destination. Throws UploadError (invalid_zip / unsafe_entry) naming the first bad entry.
 * Linear in the size of the central directory: names are bounded (MAX_NAME_BYTES, MAX_NAME_DEPTH,
 * MAX_NAMES_TOTAL_BYTES) and structure is checked through one tree of path components (hash maps),
 * never by comparing entries pairwise or re-slicing each name for each of its ancestors.
 */
export async function readZipEntries(zip: yauzl.ZipFile, limits: ZipLimits): Promise<ZipEntries> {
  if (zip.entryCount > limits.maxEntries) {
    throw invalidZip(`archive has ${zip.entryCount} entries; the limit is ${limits.maxEntries}`)
  }
  const list: ZipEntryInfo[] = []
  const root: DirNode = { children: new Map(), via: undefined as unknown as ZipEntryInfo }
  let paths = 0
  let total = 0
  // each entry is checked as it is read, so a bad one stops the read there
  const place = (entry: yauzl.Entry): void => {
    const nameBuf = entry.fileName as unknown as Buffer
    if (nameBuf.length > MAX_NAME_BYTES)
      throw unsafeEntry(nameBuf.subarray(0, 257).toString('utf8'), `name longer than ${MAX_NAME_BYTES} bytes`)
    const rawName = yauzl.getFileNameLowLevel(entry.generalPurposeBitFlag, nameBuf, entry.extraFields, true)
    const parts = normalisedParts(checkedName(rawName))
    if (entry.isEncrypted()) throw invalidZip('encrypted entries are not supported', rawName)
    if (entry.compressionMethod !== 0 && entry.compressionMethod !== 8) {
      throw invalidZip(`unsupported compression method ${entry.compressionMethod} (only stored and deflate)`, rawName)
    }
    const { kind, mode } = classify(entry, rawName)
    if (parts.length === 0) {
      if (kind !== 'dir') throw unsafeEntry(rawName, 'a non-directory entry naming the destination itself')
      return
    }
    const size = entry.uncompressedSize
    if (kind === 'dir' && size !== 0) throw invalidZip(`directory entry with ${size} bytes of data`, rawName)
    if (kind === 'symlink' && (size === 0 || size > MAX_LINK_TARGET_BYTES))
      throw unsafeEntry(rawName, `symlink target of ${size} bytes`)
    if (size > 0 && entry.compressedSize === 0) throw invalidZip('declares data but has no compressed bytes', rawName)
    // every size: a bomb made of many small entries is as bad as one big one (and the archive total is checked below)
    if (size > limits.maxRatio * entry.compressedSize) {
      throw unsafeEntry(
        rawName,
        `compression ratio ${Math.round(size / entry.compressedSize)}:1 exceeds the limit of ${limits.maxRatio}:1`,
      )
    }
    total += size
    if (total > limits.maxTotalBytes) {
      throw invalidZip(`total uncompressed size exceeds the limit of ${limits.maxTotalBytes} bytes`, rawName)
    }
    const info: ZipEntryInfo = { entry, path: parts.join('/'), rawName, kind, mode }

    // place it in the path tree: ancestors must be directories, the leaf must be new
    let node = root
    for (let i = 0; i < parts.length - 1; i++) {
      const next = node.children.get(parts[i]!)
      if (next === undefined) {
        const dir: DirNode = { children: new Map(), via: info }
        node.children.set(parts[i]!, dir)
        if (++paths > limits.maxEntries) throw tooManyPaths(limits)
        node = dir
      } else if (isDirNode(next)) {
        node = next
      } else {
        throw unsafeEntry(
          rawName,
          next.kind === 'symlink'
            ? `lies under the symlink entry ${JSON.stringify(next.rawName)}`
            : `lies under the file entry ${JSON.stringify(next.rawName)}`,
        )
      }
    }
    const leaf = parts[parts.length - 1]!
    const existing = node.children.get(leaf)
    if (existing === undefined) {
      node.children.set(leaf, kind === 'dir' ? { children: new Map(), info, via: info } : info)
      if (++paths > limits.maxEntries) throw tooManyPaths(limits)
    } else if (!isDirNode(existing)) {
      throw unsafeEntry(rawName, `duplicate of entry ${JSON.stringify(existing.rawName)}`)
    } else if (existing.info) {
      throw unsafeEntry(rawName, `duplicate of entry ${JSON.stringify(existing.info.rawName)}`)
    } else if (kind === 'dir') {
      existing.info = info
    } else {
      throw unsafeEntry(rawName, `other entries lie under it (${JSON.stringify(existing.via.rawName)})`)
    }
    list.push(info)
  }
  await new Promise<void>((resolve, reject) => {
    let nameBytes = 0
    zip.on('entry', (e: yauzl.Entry) => {
      try {
        nameBytes += e.fileNameLength
        if (nameBytes > MAX_NAMES_TOTAL_BYTES)
          throw invalidZip(`entry names add up to more than ${MAX_NAMES_TOTAL_BYTES} bytes`)
        place(e)
      } catch (err) {
        zip.removeAllListeners('entry')
        return reject(err)
      }
      zip.readEntry()
    })
    zip.once('end', () => resolve())
    zip.once('error', (err: Error) => reject(invalidZip(`corrupt central directory: ${err.message}`)))
    zip.readEntry()
  })
  // the whole archive as one bomb: many entries, each under the per-entry ratio, can still add up
  if (total > limits.maxRatio * zip.fileSize) {
    throw invalidZip(
      `total compression ratio ${Math.round(total / zip.fileSize)}:1 exceeds the limit of ${limits.maxRatio}:1`,
    )
  }

  // directories parents-first (breadth-first over the tree); path strings are built once per directory
  const dirs: ZipEntries['dirs'] = []
  let level: { node: DirNode; path: string }[] = [{ node: root, path: '' }]
  while (level.length > 0) {
    const next: typeof level = []
    for (const { node, path } of level) {
      for (const [name, child] of node.children) {
        if (!isDirNode(child)) continue
        const p = path === '' ? name : `${path}/${name}`
        dirs.push({ path: p, info: child.info, via: child.via })
        next.push({ node: child, path: p })
      }
    }
    level = next
  }
  return { list, dirs }
}

const tooManyPaths = (limits: ZipLimits) =>
  invalidZip(
    `archive creates more than ${limits.maxEntries} paths (entries plus the directories they imply); the limit is ${limits.maxEntries}`,
  )

/** The name checks of normaliseEntryName that do not split it (normalisedParts does that once). */
function checkedName(name: string): string {
  if (Buffer.byteLength(name) > MAX_NAME_BYTES) throw unsafeEntry(name, `name longer than ${MAX_NAME_BYTES} bytes`)
  if (name.length === 0) throw unsafeEntry(name, 'empty name')
  if (name.includes('\0')) throw unsafeEntry(name, 'NUL character in name')
  if (name.includes('\\')) throw unsafeEntry(name, 'backslash in name (Windows path separators are not accepted)')
  if (name.startsWith('/')) throw unsafeEntry(name, 'absolute path')
  if (/^[A-Za-z]:/.test(name)) throw unsafeEntry(name, 'drive-letter path')
  return name
}

/** Reads a small entry (symlink target, manifest) fully into memory, bounded by maxBytes. */
export async function readSmallEntry(zip: yauzl.ZipFile, info: ZipEntryInfo, maxBytes: number): Promise<Buffer> {
  if (info.entry.uncompressedSize > maxBytes) throw invalidZip(`entry is larger than ${maxBytes} bytes`, info.rawName)
  try {
    const stream = await zip.openReadStreamPromise(info.entry)
    const chunks: Buffer[] = []
    let n = 0
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      n += chunk.length
      if (n > maxBytes) {
        stream.destroy()
        throw invalidZip(`entry is larger than ${maxBytes} bytes`, info.rawName)
      }
      chunks.push(chunk)
    }
    const data = Buffer.concat(chunks)
    checkCrc(info, data)
    return data
  } catch (err) {
    if (err instanceof UploadError) throw err
    throw invalidZip(`corrupt data: ${(err as Error).message}`, info.rawName)
  }
}

export function checkCrc(info: ZipEntryInfo, data: Buffer, crc = crc32(data)): void {
  if (crc >>> 0 !== info.entry.crc32 >>> 0) throw invalidZip('CRC-32 mismatch (corrupt data)', info.rawName)
}
