// Which account a launched Chromium runs as. A daemon running as root hands the browser to an
// unprivileged user, so a page (or a CDP client) cannot read the token or the log through file://.
import { readFile } from 'node:fs/promises'
import { homedir } from 'node:os'

export interface ChromiumUser {
  name: string
  uid: number
  gid: number
}

/** nobody's conventional ids, used when /etc/passwd has no entry for it (minimal images). */
export const NOBODY: ChromiumUser = { name: 'nobody', uid: 65534, gid: 65534 }

export class ChromiumUserError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'ChromiumUserError'
  }
}

/**
 * Resolves --chromium-user (a name, or a numeric uid) against passwd text: uid and primary gid.
 * A name with no entry is refused, except `nobody`, which falls back to 65534:65534.
 */
export function resolveChromiumUser(spec: string, passwd: string): ChromiumUser {
  const want = spec.trim()
  const numeric = /^\d+$/.test(want)
  for (const line of passwd.split('\n')) {
    const [name, , uid, gid] = line.split(':')
    if (name === undefined || uid === undefined || gid === undefined || !/^\d+$/.test(uid) || !/^\d+$/.test(gid))
      continue
    if (numeric ? uid === want : name === want) return { name, uid: Number(uid), gid: Number(gid) }
  }
  if (want === NOBODY.name) return NOBODY
  if (numeric) return { name: want, uid: Number(want), gid: Number(want) }
  throw new ChromiumUserError(
    `--chromium-user: no user ${JSON.stringify(want)} in /etc/passwd (create it, e.g. useradd --system --no-create-home ` +
      `${/^[a-z_][a-z0-9_-]{0,31}$/.test(want) ? want : '<name>'}, or pass an existing user)`,
  )
}

/**
 * The home of the user a launched Chromium runs as (a root daemon's --chromium-user, else the
 * daemon's own user): where that browser's downloads and its user's files go.
 */
export async function chromiumUserHome(spec: string, passwdPath = '/etc/passwd'): Promise<string | undefined> {
  if (process.getuid?.() !== 0) return homedir() || undefined
  const passwd = await readFile(passwdPath, 'utf8').catch(() => '')
  let user: ChromiumUser
  try {
    user = resolveChromiumUser(spec, passwd)
  } catch {
    return undefined
  }
  return passwdHome(user.uid, passwd)
}

/** The home field of the passwd entry of this uid (undefined: no entry, or none given). */
export function passwdHome(uid: number, passwd: string): string | undefined {
  for (const line of passwd.split('\n')) {
    const f = line.split(':')
    if (f.length >= 6 && f[2] === String(uid) && f[5]) return f[5]
  }
  return undefined
}

/** The user to launch Chromium as: only a root daemon switches users (undefined: the daemon's own). */
export async function chromiumUserFor(spec: string, passwdPath = '/etc/passwd'): Promise<ChromiumUser | undefined> {
  const passwd = await readFile(passwdPath, 'utf8').catch(() => '')
  const user = resolveChromiumUser(spec, passwd) // refused even when not root: a typo should not wait for the first root start
  return process.getuid?.() === 0 && user.uid !== 0 ? user : undefined
}
