// Small files (token, browser id, ...) are written whole or not at all: temp file in the same
// directory, fsync, then rename (or link when the file must not be replaced), then fsync of the
// directory. A full disk or a crash can leave a stray temp file, never an empty or half file.
import { randomBytes } from 'node:crypto'
import { link, open, rename, unlink } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'

/** The fs calls the helper makes; tests inject failures (ENOSPC) here. */
export interface AtomicFileFs {
  open: typeof open
  rename: typeof rename
  link: typeof link
  unlink: typeof unlink
}

const realFs: AtomicFileFs = { open, rename, link, unlink }

export interface AtomicWriteOptions {
  /** File mode (default 0o600: everything the daemon writes is private). */
  mode?: number
  /** Fail with EEXIST instead of replacing an existing file (another process wrote it first). */
  exclusive?: boolean
  fs?: AtomicFileFs
}

/** Temp names start with this, so a sweep (or a human) can tell them apart. */
export const ATOMIC_TEMP_PREFIX = '.tmp-'

export async function writeFileAtomic(
  path: string,
  data: string | Uint8Array,
  opts: AtomicWriteOptions = {},
): Promise<void> {
  const fs = opts.fs ?? realFs
  const dir = dirname(path)
  const tmp = join(dir, `${ATOMIC_TEMP_PREFIX}${basename(path)}-${process.pid}-${randomBytes(4).toString('hex')}`)
  let renamed = false
  try {
    const fh = await fs.open(tmp, 'wx', opts.mode ?? 0o600)
    try {
      await fh.writeFile(data)
      await fh.sync()
    } finally {
      await fh.close()
    }
    if (opts.exclusive) {
      await fs.link(tmp, path) // EEXIST when the file exists: never replaces it
    } else {
      await fs.rename(tmp, path)
      renamed = true
    }
    await syncDir(dir, fs)
  } finally {
    if (!renamed) await fs.unlink(tmp).catch(() => undefined)
  }
}

async function syncDir(dir: string, fs: AtomicFileFs): Promise<void> {
  // The rename is durable only once the directory entry is; some filesystems refuse a dir fsync.
  const fh = await fs.open(dir, 'r')
  try {
    await fh.sync()
  } catch {
    /* EINVAL/EISDIR on some filesystems: the rename still happened */
  } finally {
    await fh.close()
  }
}
