// Zip archives for tests: well-formed ones through yazl, and hand-written raw bytes for what yazl
// refuses to express (absolute and ".." names, duplicates, encrypted flag, symlinks and special files
// via external attributes, lying sizes, wrong CRC).
import { crc32, deflateRawSync } from 'node:zlib'
import yazl from 'yazl'

export interface YazlEntry {
  name: string
  data?: Buffer | string
  mode?: number
  dir?: boolean
  compress?: boolean
}

export async function yazlZip(entries: YazlEntry[]): Promise<Buffer> {
  const zip = new yazl.ZipFile()
  for (const e of entries) {
    if (e.dir) zip.addEmptyDirectory(e.name, e.mode !== undefined ? { mode: e.mode } : {})
    else
      zip.addBuffer(Buffer.from(e.data ?? ''), e.name, {
        ...(e.mode !== undefined ? { mode: e.mode } : {}),
        compress: e.compress ?? true,
      })
  }
  zip.end()
  const chunks: Buffer[] = []
  for await (const c of zip.outputStream) chunks.push(c as Buffer)
  return Buffer.concat(chunks)
}

export interface RawEntry {
  name: string
  data?: Buffer | string
  /** 0 stored, 8 deflate (default 8 when data is non-empty). */
  method?: number
  /** Unix mode incl. type bits (e.g. 0o100644, 0o120777 for a symlink); sets "made by Unix". */
  unixMode?: number
  flags?: number
  /** Overrides of what the headers declare. */
  crc?: number
  uncompressedSize?: number
  compressedSize?: number
}

/** A zip written byte by byte: local headers + data, central directory, end record. */
export function rawZip(entries: RawEntry[]): Buffer {
  const locals: Buffer[] = []
  const centrals: Buffer[] = []
  let offset = 0
  for (const e of entries) {
    const data = Buffer.from(e.data ?? '')
    const method = e.method ?? (data.length > 0 ? 8 : 0)
    const body = method === 8 ? deflateRawSync(data) : data
    const name = Buffer.from(e.name, 'utf8')
    const crc = e.crc ?? crc32(data)
    const usize = e.uncompressedSize ?? data.length
    const csize = e.compressedSize ?? body.length
    const flags = (e.flags ?? 0) | 0x800 // UTF-8 names
    const local = Buffer.alloc(30)
    local.writeUInt32LE(0x04034b50, 0)
    local.writeUInt16LE(20, 4)
    local.writeUInt16LE(flags, 6)
    local.writeUInt16LE(method, 8)
    local.writeUInt32LE(0, 10) // time, date
    local.writeUInt32LE(crc >>> 0, 14)
    local.writeUInt32LE(csize, 18)
    local.writeUInt32LE(usize, 22)
    local.writeUInt16LE(name.length, 26)
    local.writeUInt16LE(0, 28)
    const central = Buffer.alloc(46)
    central.writeUInt32LE(0x02014b50, 0)
    central.writeUInt16LE(e.unixMode !== undefined ? (3 << 8) | 20 : 20, 4)
    central.writeUInt16LE(20, 6)
    central.writeUInt16LE(flags, 8)
    central.writeUInt16LE(method, 10)
    central.writeUInt32LE(0, 12)
    central.writeUInt32LE(crc >>> 0, 16)
    central.writeUInt32LE(csize, 20)
    central.writeUInt32LE(usize, 24)
    central.writeUInt16LE(name.length, 28)
    central.writeUInt16LE(0, 30) // extra
    central.writeUInt16LE(0, 32) // comment
    central.writeUInt16LE(0, 34) // disk
    central.writeUInt16LE(0, 36) // internal attrs
    central.writeUInt32LE(e.unixMode !== undefined ? (e.unixMode << 16) >>> 0 : 0, 38)
    central.writeUInt32LE(offset, 42)
    locals.push(local, name, body)
    centrals.push(central, name)
    offset += local.length + name.length + body.length
  }
  const cd = Buffer.concat(centrals)
  const end = Buffer.alloc(22)
  end.writeUInt32LE(0x06054b50, 0)
  end.writeUInt32LE(cd.length, 12)
  end.writeUInt32LE(offset, 16)
  if (entries.length <= 0xffff) {
    end.writeUInt16LE(entries.length, 8)
    end.writeUInt16LE(entries.length, 10)
    return Buffer.concat([...locals, cd, end])
  }
  // more than 65,535 entries: a ZIP64 end record and its locator carry the count
  end.writeUInt16LE(0xffff, 8)
  end.writeUInt16LE(0xffff, 10)
  const z64 = Buffer.alloc(56)
  z64.writeUInt32LE(0x06064b50, 0)
  z64.writeBigUInt64LE(44n, 4)
  z64.writeUInt16LE(45, 12)
  z64.writeUInt16LE(45, 14)
  z64.writeBigUInt64LE(BigInt(entries.length), 24)
  z64.writeBigUInt64LE(BigInt(entries.length), 32)
  z64.writeBigUInt64LE(BigInt(cd.length), 40)
  z64.writeBigUInt64LE(BigInt(offset), 48)
  const locator = Buffer.alloc(20)
  locator.writeUInt32LE(0x07064b50, 0)
  locator.writeBigUInt64LE(BigInt(offset + cd.length), 8)
  locator.writeUInt32LE(1, 16)
  return Buffer.concat([...locals, cd, z64, locator, end])
}
