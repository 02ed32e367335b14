// A byte-for-byte picture of a directory tree, for "untouched" / "exactly the old or the new tree" checks.
// Synchronous on purpose: a few hundred small files, and no thread-pool round trip per file.
import { createHash } from 'node:crypto'
import { lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs'
import { join } from 'node:path'

/** Every path under dir with its type, mode and content hash (or link target). */
export async function snapshot(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  const walk = (rel: string) => {
    for (const name of readdirSync(join(dir, rel)).sort()) {
      const p = join(rel, name)
      const st = lstatSync(join(dir, p))
      const mode = (st.mode & 0o7777).toString(8)
      if (st.isSymbolicLink()) out[p] = `link ${readlinkSync(join(dir, p))}`
      else if (st.isDirectory()) {
        out[p] = `dir ${mode}`
        walk(p)
      } else
        out[p] = `file ${mode} ${createHash('sha256')
          .update(readFileSync(join(dir, p)))
          .digest('hex')
          .slice(0, 16)}`
    }
  }
  walk('')
  return out
}
