// Moving an extracted tree into place, crash-safe. The whole move is planned first and written as a
// journal (fsync'd) before the first rename; replaced files go to a backup directory that only the
// journal names (no sweep removes it). Recovery is driven by what is on disk, so it is idempotent:
// every move is a rename, and "the staging source is gone" is exactly "this move happened".
//   <dir>/.merge-<id>.json      written before any move: recovery rolls the merge back
//   <dir>/.merge-<id>.cleanup   renamed to once every move is done and synced (the commit), or once a
//                               rollback is complete: recovery only deletes backups and staging
// Rolling back undoes the moves in reverse (new content back into staging, backups back into place,
// created parents removed); rolling forward only deletes the backups and the staging directory.
// The second state matters after a rollback too: once staging is being deleted, replaying the
// rollback would try to move restored originals back into a staging directory that is gone.
import { randomBytes } from 'node:crypto'
import { lstat, mkdir, open, readdir, readFile, rename, rm, rmdir, stat, writeFile } from 'node:fs/promises'
import { posix } from 'node:path'
import { isMissing } from './destination.js'

export const STAGING_PREFIX = '.upload-staging-'
export const BACKUP_PREFIX = '.upload-backup-'
export const JOURNAL_PREFIX = '.merge-'
const PENDING = '.json'
const CLEANUP = '.cleanup'

export interface MergePlan {
  version: 1
  /** Absolute destination. */
  dest: string
  /** Staging directory (`<anchor>/.upload-staging-*`), holding `tree`. */
  staging: string
  /** The extracted tree inside staging. */
  tree: string
  /** Where replaced files are kept until commit (`<anchor>/.upload-backup-*`). */
  backup: string
  /** Missing parents of a new destination, created in this order. */
  created: string[]
  /** Moves in order: path relative to tree/dest ('' = the whole tree), and whether it replaces an existing file (kept as backup/<index>). */
  moves: [rel: string, replaces: boolean][]
}

const srcOf = (p: MergePlan, rel: string) => (rel === '' ? p.tree : posix.join(p.tree, rel))
const dstOf = (p: MergePlan, rel: string) => (rel === '' ? p.dest : posix.join(p.dest, rel))
const backupOf = (p: MergePlan, i: number) => posix.join(p.backup, String(i))

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path)
    return true
  } catch (err) {
    if (isMissing(err)) return false
    throw err
  }
}

export async function fsyncPath(path: string): Promise<void> {
  const fh = await open(path, 'r')
  try {
    await fh.sync()
  } finally {
    await fh.close()
  }
}

/**
 * Plans the move of `tree` into `dest`. A missing destination is one rename of the whole tree (after
 * creating its missing parents below `anchor`); an existing one is merged: paths missing in dest are
 * renamed in whole, directories present on both sides are descended, files present on both sides
 * replace the existing ones (which go to the backup directory).
 */
export async function planMerge(
  tree: string,
  staging: string,
  dest: { path: string; exists: boolean; anchor: string },
): Promise<MergePlan> {
  const plan: MergePlan = {
    version: 1,
    dest: dest.path,
    staging,
    tree,
    backup: posix.join(dest.anchor, `${BACKUP_PREFIX}${randomBytes(6).toString('hex')}`),
    created: [],
    moves: [],
  }
  if (!dest.exists) {
    const missing = posix.relative(dest.anchor, dest.path).split('/')
    let cur = dest.anchor
    for (const part of missing.slice(0, -1)) plan.created.push((cur = posix.join(cur, part)))
    plan.moves.push(['', false])
    return plan
  }
  const walk = async (rel: string): Promise<void> => {
    for (const name of (await readdir(srcOf(plan, rel))).sort()) {
      // sorted: a deterministic order of moves
      const r = rel === '' ? name : `${rel}/${name}`
      const srcIsDir = (await lstat(srcOf(plan, r))).isDirectory()
      let dstSt
      try {
        dstSt = await lstat(dstOf(plan, r))
      } catch (err) {
        if (!isMissing(err)) throw err
      }
      if (!dstSt) {
        plan.moves.push([r, false])
      } else if (srcIsDir) {
        const dstIsDir = dstSt.isDirectory() || (dstSt.isSymbolicLink() && (await stat(dstOf(plan, r))).isDirectory())
        if (!dstIsDir) throw new Error(`${dstOf(plan, r)} changed during extraction: it is no longer a directory`)
        await walk(r)
      } else {
        if (dstSt.isDirectory()) throw new Error(`${dstOf(plan, r)} changed during extraction: it is now a directory`)
        plan.moves.push([r, true])
      }
    }
  }
  await walk('')
  return plan
}

/** Writes the journal durably (temp file, fsync, rename, fsync of its directory); returns its path. */
export async function writeJournal(dir: string, plan: MergePlan): Promise<string> {
  const id = posix.basename(plan.staging).slice(STAGING_PREFIX.length)
  const path = posix.join(dir, `${JOURNAL_PREFIX}${id}${PENDING}`)
  const tmp = `${path}.tmp`
  await writeFile(tmp, JSON.stringify(plan), { mode: 0o600, flush: true })
  await rename(tmp, path)
  await fsyncPath(dir)
  return path
}

/** Performs the planned moves, then syncs every directory they touched. */
export async function applyMerge(plan: MergePlan): Promise<void> {
  for (const dir of plan.created) await mkdir(dir)
  if (plan.moves.some(([, replaces]) => replaces)) await mkdir(plan.backup, { mode: 0o700 })
  const touched = new Set<string>()
  for (let i = 0; i < plan.moves.length; i++) {
    const [rel, replaces] = plan.moves[i]!
    const dst = dstOf(plan, rel)
    if (replaces) await rename(dst, backupOf(plan, i))
    await rename(srcOf(plan, rel), dst)
    touched.add(posix.dirname(dst))
  }
  // the renames must be on disk before the commit record says they are
  if (plan.moves.some(([, replaces]) => replaces)) touched.add(plan.backup)
  if (plan.created.length > 0) touched.add(posix.dirname(plan.created[0]!))
  for (const dir of touched) await fsyncPath(dir)
}

/**
 * Marks the merge settled (durably): committed, or completely rolled back. From here on recovery
 * only deletes backups and staging. Returns the new journal path.
 */
export async function settleJournal(journal: string): Promise<string> {
  const settled = journal.slice(0, -PENDING.length) + CLEANUP
  await rename(journal, settled)
  await fsyncPath(posix.dirname(journal))
  return settled
}

/** Undoes whatever part of the plan happened, newest move first. Idempotent; safe after a crash at any point. */
export async function rollbackMerge(plan: MergePlan): Promise<void> {
  // "source gone" means "moved" only while staging exists; without it, guessing could delete originals
  if (!(await exists(plan.staging)))
    throw new Error(`cannot roll back the merge into ${plan.dest}: its staging directory ${plan.staging} is gone`)
  for (let i = plan.moves.length - 1; i >= 0; i--) {
    const [rel, replaces] = plan.moves[i]!
    const src = srcOf(plan, rel)
    const dst = dstOf(plan, rel)
    if (!(await exists(src)) && (await exists(dst))) await rename(dst, src)
    if (replaces && (await exists(backupOf(plan, i)))) await rename(backupOf(plan, i), dst)
  }
  for (const dir of [...plan.created].reverse()) {
    await rmdir(dir).catch((err: NodeJS.ErrnoException) => {
      if (!isMissing(err) && err.code !== 'ENOTEMPTY') throw err
    })
  }
}

/** Removes what a finished (committed or rolled back) merge leaves: backups, staging, then the journal. */
export async function finishMerge(plan: MergePlan, journal?: string): Promise<void> {
  await rm(plan.backup, { recursive: true, force: true })
  await rm(plan.staging, { recursive: true, force: true })
  if (journal) await rm(journal, { force: true })
}

/** Only our own shapes: a journal names a staging and a backup directory by their prefixes, absolute. */
function validPlan(p: unknown): p is MergePlan {
  const x = p as MergePlan
  return (
    typeof x === 'object' &&
    x !== null &&
    x.version === 1 &&
    [x.dest, x.staging, x.tree, x.backup].every(s => typeof s === 'string' && posix.isAbsolute(s)) &&
    posix.basename(x.staging).startsWith(STAGING_PREFIX) &&
    posix.basename(x.backup).startsWith(BACKUP_PREFIX) &&
    x.tree === posix.join(x.staging, 'tree') &&
    Array.isArray(x.created) &&
    Array.isArray(x.moves)
  )
}

/**
 * Startup recovery: every interrupted merge journaled in dir is rolled back (no commit record) or
 * forward (settled: committed, or already rolled back). Must run before the staging sweep and before the API accepts uploads.
 * Returns what was done, e.g. for a log line.
 */
export interface RecoveryReport {
  rolledBack: number
  settled: number
  /** Merges that could not be rolled back: left as they are (journal, staging, backups) for an operator. */
  failed: { journal: string; staging: string; message: string }[]
}

export async function recoverMerges(dir: string): Promise<RecoveryReport> {
  const out: RecoveryReport = { rolledBack: 0, settled: 0, failed: [] }
  let names: string[]
  try {
    names = await readdir(dir)
  } catch (err) {
    if (isMissing(err)) return out
    throw err
  }
  for (const name of names.sort()) {
    if (!name.startsWith(JOURNAL_PREFIX)) continue
    const path = posix.join(dir, name)
    if (name.endsWith(`${PENDING}.tmp`)) {
      await rm(path, { force: true })
      continue
    } // never became a journal: no move happened
    const settled = name.endsWith(CLEANUP)
    if (!settled && !name.endsWith(PENDING)) continue
    let plan: unknown
    try {
      plan = JSON.parse(await readFile(path, 'utf8'))
    } catch {
      plan = undefined
    }
    if (!validPlan(plan)) {
      await rm(path, { force: true })
      continue
    }
    let journal = path
    if (settled) {
      out.settled++
    } else {
      try {
        await rollbackMerge(plan)
      } catch (err) {
        // left in place (journal, staging, backups) for an operator; never guessed at
        out.failed.push({ journal: path, staging: plan.staging, message: (err as Error).message })
        continue
      }
      journal = await settleJournal(path)
      out.rolledBack++
    }
    await finishMerge(plan, journal)
  }
  return out
}
