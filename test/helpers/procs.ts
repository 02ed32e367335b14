// Process trees from /proc (a launched Chromium's renderers, zygotes, utilities).
import { readdir, readFile } from 'node:fs/promises'

/** Every descendant of pid (parent links from /proc/<pid>/stat; Chromium forks from several threads). */
export async function descendants(pid: number): Promise<number[]> {
  const parent = new Map<number, number>()
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue
    const stat = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => '')
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
    if (ppid) parent.set(Number(name), ppid)
  }
  const isBelow = (p: number): boolean => {
    for (let q = parent.get(p); q !== undefined; q = parent.get(q)) if (q === pid) return true
    return false
  }
  return [...parent.keys()].filter(isBelow)
}

/** Live processes whose command line names dir or a path under it (a browser's helpers name its profile). */
export async function processesNaming(dir: string): Promise<number[]> {
  const found: number[] = []
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue
    const cmdline = await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '')
    if (cmdline.includes(`${dir}\0`) || cmdline.includes(`${dir}/`)) found.push(Number(name))
  }
  return found
}
