// Writing one entry's data: small entries read and inflated in one synchronous piece, bigger ones
// streamed from the archive through inflate and a CRC check; the local header is located from the
// central directory's offset (never trusted for sizes).
import { closeSync, constants as fsc, createWriteStream, fchmodSync, openSync, readSync, writeSync } from 'node:fs'
import { chmod, type FileHandle } from 'node:fs/promises'
import { Readable, Transform, type TransformCallback } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { crc32, createInflateRaw, inflateRawSync } from 'node:zlib'
import { invalidZip, UploadError } from './errors.js'
import { checkCrc, type ZipEntryInfo } from './zip-entries.js'

/** Writes one file entry, verifying CRC-32 and exact size; returns the bytes written. */
/** Entries at most this big (compressed and uncompressed) are extracted in one piece, synchronously; bigger ones stream. */
const WHOLE_MAX_BYTES = 4 * 1024 * 1024
/** Read once: calling process.umask() without an argument is deprecated for repeated use. */
export const UMASK = process.umask()
/** File modes keep at most rwxr-xr-x: nothing an archive says makes a file group- or world-writable. */
export const FILE_MODE_MASK = 0o755
const DEFAULT_FILE_MODE = 0o644

export async function extractFile(
  archive: FileHandle,
  info: ZipEntryInfo,
  target: string,
  scratch: Scratch,
): Promise<number> {
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
export class Scratch {
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
