// The browser session id served under /browsers/{id}: --browser-id, else generated once and kept
// in <dataDir>/browser-id so it survives restarts.
import { randomBytes } from 'node:crypto'
import { mkdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { writeFileAtomic } from '../util/atomic-file.js'

export const BROWSER_ID_SYNTAX = /^[A-Za-z0-9._-]{1,128}$/

export async function resolveBrowserId(dataDir: string, configured?: string): Promise<string> {
  if (configured !== undefined) return configured
  const path = join(dataDir, 'browser-id')
  try {
    const id = (await readFile(path, 'utf8')).trim()
    if (!BROWSER_ID_SYNTAX.test(id))
      throw new Error(`${path} does not hold a valid browser id; delete it or pass --browser-id`)
    return id
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
  const id = randomBytes(12).toString('hex')
  await mkdir(dataDir, { recursive: true, mode: 0o700 })
  try {
    await writeFileAtomic(path, id + '\n', { mode: 0o600, exclusive: true })
    return id
  } catch (err) {
    // Another process created it first: use theirs.
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return (await readFile(path, 'utf8')).trim()
    throw err
  }
}
