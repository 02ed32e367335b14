// Safe zip extraction: validate everything first, extract into a staging directory on the same
// filesystem, then move into place with an undo log so a failure at any point leaves the
// destination exactly as it was. The archive is read with random access (yauzl), never whole.
import { chmod, mkdir, open, rm, symlink, writeFile } from 'node:fs/promises'
import { randomBytes } from 'node:crypto'
import { posix } from 'node:path'
import { performance } from 'node:perf_hooks'
import { insufficientStorage, UploadError } from './errors.js'
import { resolveDestination, type Destination } from './destination.js'
import { DEFAULT_ZIP_LIMITS, openZip, readZipEntries, type ZipEntries, type ZipLimits } from './zip-entries.js'
import { checkAgainstDestination, checkFreeSpace, ExistingTree } from './destination-checks.js'
import { extractFile, FILE_MODE_MASK, Scratch } from './entry-data.js'
import {
  applyMerge,
  finishMerge,
  planMerge,
  rollbackMerge,
  settleJournal,
  STAGING_PREFIX,
  writeJournal,
} from './merge-journal.js'

/** Longest run of synchronous extraction work before yielding to the event loop. */
const SLICE_MS = 10

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
