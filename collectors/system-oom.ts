// Kernel OOM-kill reports -> system_oom_kill data. Pure: lines in, data out (no I/O), so it is tested
// against recorded reports of several kernel versions.
//
// A report (mm/oom_kill.c dump_header + oom_kill_process) looks like, across 4.19 .. 6.x:
//   <comm> invoked oom-killer: gfp_mask=..., order=0, oom_score_adj=0      (trigger name)
//   CPU: 1 [UID: 0 ]PID: 1234 Comm: <comm> Not tainted ...                  (trigger pid)
//   memory: usage 32768kB, limit 32768kB, failcnt 19                        (memcg OOM only)
//   Mem-Info: ... free:13134 ... / 524158 pages RAM                          (global OOM only; pages)
//   Tasks state (memory values in pages):
//   [  pid  ]   uid  tgid total_vm      rss [rss_anon rss_file rss_shmem] pgtables_bytes swapents oom_score_adj name
//   [   1234]     0  1234     8869     8526 ...                                               tail
//   oom-kill:constraint=CONSTRAINT_MEMCG,...                                 (4.19+)
//   [Memory cgroup ]Out of memory: Killed process 1234 (tail) total-vm:..kB, anon-rss:..kB, file-rss:..kB, shmem-rss:..kB[, UID:..]
//   (4.19 also prints "Out of memory: Kill process N (x) score S or sacrifice child" before it.)
import type { EventData } from '../src/collector-kit.js'

export type OomKill = EventData<'system_oom_kill'>
type Constraint = NonNullable<OomKill['constraint']>
type TopTask = NonNullable<OomKill['top_tasks']>[number]

/** Task-dump rss is in pages; the daemon's VMs are x86-64/arm64 with 4 KiB pages. */
const PAGE_KB = 4
const TOP_TASKS = 5
/** Kernel comm is at most 15 characters (TASK_COMM_LEN 16). */
const COMM_MAX = 15
/** "limit 9007199254740988kB" means no limit. */
const UNLIMITED_KB = 2 ** 50

const CONSTRAINTS: Record<string, Constraint> = {
  CONSTRAINT_NONE: 'none',
  CONSTRAINT_MEMCG: 'memcg',
  CONSTRAINT_CPUSET: 'cpuset',
  CONSTRAINT_MEMORY_POLICY: 'memory_policy',
}

const RE = {
  invoked: /^(.+?) invoked oom-killer: /,
  cpuLine: /^CPU: \d+ (?:UID: \d+ )?PID: (\d+) Comm: /,
  memcgUsage: /^memory: usage (\d+)kB, limit (\d+)kB/,
  memInfoFree: /(?:^|\s)free:(\d+) free_pcp:/,
  pagesRam: /^(\d+) pages RAM$/,
  tasksHeader: /^\[\s*pid\s*\]\s+(.*\bname)\s*$/,
  taskRow: /^\[\s*(\d+)\]\s+(.*)$/,
  constraint: /^oom-kill:constraint=(CONSTRAINT_[A-Z_]+)/,
  killed: /Killed process (\d+) \((.*)\) total-vm:\d+kB, anon-rss:(\d+)kB, file-rss:(\d+)kB(?:, shmem-rss:(\d+)kB)?/,
}

/** Removes what log tools put before the kernel text: "[ 123.456789] ", "Mar 14 10:21:07 host kernel: ". */
export function stripLogPrefix(line: string): string {
  let l = line.replace(/\r$/, '')
  l = l.replace(/^(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\S+) \S+ kernel: /, '')
  l = l.replace(/^\[\s*\d+\.\d+\]\s?/, '')
  return l
}

/**
 * Parses one OOM report (its lines, with or without dmesg/syslog prefixes). Returns undefined when
 * the lines hold no "Killed process" line (no victim, nothing to report).
 */
export function parseOomReport(lines: readonly string[]): OomKill | undefined {
  let triggerName: string | undefined
  let triggerPid: number | undefined
  let constraint: Constraint | undefined
  let memcg: { usage: number; limit: number } | undefined
  let freePages: number | undefined
  let ramPages: number | undefined
  let columns: string[] | undefined
  let inTable = false
  const tasks: TopTask[] = []
  let killed: { pid: number; name: string; rssKb: number } | undefined

  for (const raw of lines) {
    const line = stripLogPrefix(raw)
    const text = line.trim()
    let m: RegExpExecArray | null
    if (inTable) {
      if ((m = RE.taskRow.exec(text))) {
        const task = parseTaskRow(Number(m[1]), m[2]!, columns!)
        if (task) tasks.push(task)
        continue
      }
      inTable = false
    }
    if (triggerName === undefined && (m = RE.invoked.exec(text))) {
      triggerName = m[1]
      continue
    }
    if (triggerName !== undefined && triggerPid === undefined && (m = RE.cpuLine.exec(text))) {
      triggerPid = Number(m[1])
      continue
    }
    if ((m = RE.memcgUsage.exec(text))) {
      memcg = { usage: Number(m[1]), limit: Number(m[2]) }
      continue
    }
    if (freePages === undefined && (m = RE.memInfoFree.exec(text))) {
      freePages = Number(m[1])
      continue
    }
    if ((m = RE.pagesRam.exec(text))) {
      ramPages = Number(m[1])
      continue
    }
    if ((m = RE.tasksHeader.exec(text))) {
      columns = m[1]!.trim().split(/\s+/)
      inTable = true
      tasks.length = 0
      continue
    }
    if ((m = RE.constraint.exec(text))) {
      constraint = CONSTRAINTS[m[1]!]
      continue
    }
    if ((m = RE.killed.exec(text))) {
      killed = { pid: Number(m[1]), name: m[2]!, rssKb: Number(m[3]) + Number(m[4]) + Number(m[5] ?? 0) }
    }
  }
  if (!killed) return undefined

  const out: OomKill = { pid: killed.pid, process_name: killed.name.slice(0, COMM_MAX), rss_kb: killed.rssKb }
  if (constraint) out.constraint = constraint
  if (memcg && memcg.limit < UNLIMITED_KB) {
    // A memcg OOM is about the group's memory: its limit is the total, what is left under it the free.
    out.mem_free_kb = Math.max(0, memcg.limit - memcg.usage)
    out.mem_total_kb = memcg.limit
  } else {
    if (freePages !== undefined) out.mem_free_kb = freePages * PAGE_KB
    if (ramPages !== undefined) out.mem_total_kb = ramPages * PAGE_KB
  }
  if (tasks.length > 0) {
    out.top_tasks = tasks.sort((a, b) => b.rss_kb - a.rss_kb || a.pid - b.pid).slice(0, TOP_TASKS)
  }
  if (triggerPid !== undefined) out.trigger_pid = triggerPid
  if (triggerName !== undefined) out.trigger_process_name = triggerName.slice(0, COMM_MAX)
  return out
}

/** One task-dump row after "[ pid]": the numeric columns by header name, then the name (may hold spaces). */
function parseTaskRow(pid: number, rest: string, columns: string[]): TopTask | undefined {
  const numeric = columns.length - 1 // the last column is the name
  const rssAt = columns.indexOf('rss')
  if (rssAt < 0 || rssAt >= numeric) return undefined
  const m = new RegExp(`^((?:-?\\d+\\s+){${numeric}})(.+)$`).exec(rest)
  if (!m) return undefined
  const values = m[1]!.trim().split(/\s+/)
  const rss = Number(values[rssAt])
  if (!Number.isFinite(rss) || rss < 0) return undefined
  return { name: m[2]!.trim(), pid, rss_kb: rss * PAGE_KB }
}

/**
 * Cuts a stream of kernel log lines into OOM reports: a report starts at "invoked oom-killer" and
 * ends at its "Killed process" line. A "Killed process" line seen without its start (the reader
 * started mid-report) still yields the victim.
 */
export class OomReportAssembler {
  private lines: string[] | undefined
  /** Task dumps of big machines run to thousands of lines; past this the rest is dropped. */
  static readonly MAX_LINES = 20_000

  push(line: string): OomKill | undefined {
    if (line.includes(' invoked oom-killer: ')) {
      this.lines = [line]
      return undefined
    }
    if (this.lines && this.lines.length < OomReportAssembler.MAX_LINES) this.lines.push(line)
    if (RE.killed.test(line)) {
      const report = this.lines ?? [line]
      this.lines = undefined
      return parseOomReport(report)
    }
    return undefined
  }
}

export interface KmsgRecord {
  /** syslog facility (0 = kernel; anything a process writes to /dev/kmsg is 1 = user or higher). */
  facility: number
  level: number
  seq: number
  /** Microseconds since boot. */
  tsUs: number
  /** The message, unescaped, split into lines. */
  lines: string[]
}

/** Parses one /dev/kmsg record line "pri,seq,ts,flags[,...];message" (continuation " KEY=value" lines excluded). */
export function parseKmsgRecord(line: string): KmsgRecord | undefined {
  const semi = line.indexOf(';')
  if (semi < 0) return undefined
  const head = line.slice(0, semi).split(',')
  if (head.length < 3) return undefined
  const pri = Number(head[0])
  const seq = Number(head[1])
  const tsUs = Number(head[2])
  if (!Number.isInteger(pri) || !Number.isInteger(seq) || !Number.isInteger(tsUs)) return undefined
  // The kernel escapes non-printable bytes (newlines included) as \xHH.
  const message = line
    .slice(semi + 1)
    .replace(/\\x([0-9a-f]{2})/gi, (_m, h: string) => String.fromCharCode(parseInt(h, 16)))
  return { facility: pri >> 3, level: pri & 7, seq, tsUs, lines: message.split('\n') }
}
