// The OOM-report parser against recorded kernel OOM-kill reports of several kernel versions and
// log formats (dmesg, journal, raw /dev/kmsg records), each checked field by field.
import t from 'tap'
import { readFileSync } from 'node:fs'
import { OomReportAssembler, parseKmsgRecord, parseOomReport, stripLogPrefix } from '../collectors/system-oom.js'
import { validateData } from '../src/events/index.js'

const fixture = (name: string) => readFileSync(new URL(`./fixtures/oom/${name}`, import.meta.url), 'utf8').split('\n')

/** Kernel lines of a raw /dev/kmsg dump (continuation " KEY=value" lines are not messages). */
const kmsgLines = (lines: string[]) =>
  lines.filter(l => l && !l.startsWith(' ')).flatMap(l => parseKmsgRecord(l)!.lines)

const cases = {
  'linux-4.19-global.dmesg': {
    pid: 2511,
    process_name: 'stress',
    rss_kb: 1803496,
    constraint: 'none',
    mem_free_kb: 13134 * 4,
    mem_total_kb: 524158 * 4,
    top_tasks: [
      { name: 'stress', pid: 2511, rss_kb: 450874 * 4 },
      { name: 'bash', pid: 651, rss_kb: 829 * 4 },
      { name: 'dhclient', pid: 421, rss_kb: 549 * 4 },
      { name: 'systemd', pid: 631, rss_kb: 380 * 4 },
      { name: 'systemd-journal', pid: 245, rss_kb: 363 * 4 },
    ],
    trigger_pid: 2511,
    trigger_process_name: 'stress',
  },
  'linux-5.10-global.journal': {
    pid: 2890,
    process_name: 'chromium',
    rss_kb: 812340 + 10240 + 20480,
    constraint: 'none',
    mem_free_kb: 21337 * 4,
    mem_total_kb: 1048442 * 4,
    top_tasks: [
      { name: 'node', pid: 3120, rss_kb: 598866 * 4 },
      { name: 'chromium', pid: 2890, rss_kb: 210765 * 4 },
      { name: 'Web Content', pid: 2944, rss_kb: 40121 * 4 },
      { name: 'browser-telemet', pid: 2870, rss_kb: 26010 * 4 },
      { name: 'chromium', pid: 2911, rss_kb: 18234 * 4 },
    ],
    trigger_pid: 3120,
    trigger_process_name: 'node',
  },
  'linux-6.1-memcg.dmesg': {
    pid: 4417,
    process_name: 'chromium',
    rss_kb: 780120 + 12340 + 2600,
    constraint: 'memcg',
    mem_free_kb: 0,
    mem_total_kb: 1048576,
    top_tasks: [
      { name: 'chromium', pid: 4417, rss_kb: 198765 * 4 },
      { name: 'chromium', pid: 4390, rss_kb: 61234 * 4 },
      { name: 'chromium', pid: 4433, rss_kb: 24567 * 4 },
      { name: 'chromium', pid: 4418, rss_kb: 12001 * 4 },
      { name: 'browser-telemet', pid: 4460, rss_kb: 9876 * 4 },
    ],
    trigger_pid: 4417,
    trigger_process_name: 'chromium',
  },
} as const

for (const [name, expected] of Object.entries(cases)) {
  t.test(`${name}: every field exact`, async t => {
    const lines = fixture(name)
    const parsed = parseOomReport(lines)
    t.same(parsed, expected)
    t.same(validateData('system_oom_kill', parsed), [], 'valid system_oom_kill data')
    // The streaming assembler cuts the same report out of the line stream.
    const a = new OomReportAssembler()
    const out = lines.map(l => a.push(l)).filter(Boolean)
    t.same(out, [expected])
  })
}

t.test(
  'linux-6.18 raw /dev/kmsg records (recorded on this machine: memcg v1 OOM, rss_anon/rss_file/rss_shmem columns)',
  async t => {
    const lines = kmsgLines(fixture('linux-6.18-memcg.kmsg'))
    t.equal(lines[0], 'tail invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0')
    const expected = {
      pid: 10518,
      process_name: 'tail',
      rss_kb: 32640 + 1464 + 0,
      constraint: 'memcg',
      mem_free_kb: 0,
      mem_total_kb: 32768,
      top_tasks: [{ name: 'tail', pid: 10518, rss_kb: 8526 * 4 }],
      trigger_pid: 10518,
      trigger_process_name: 'tail',
    }
    t.same(parseOomReport(lines), expected)
    const a = new OomReportAssembler()
    t.same(lines.map(l => a.push(l)).filter(Boolean), [expected])
  },
)

t.test('parseKmsgRecord', async t => {
  t.same(parseKmsgRecord('4,344,448168627,-;tail invoked oom-killer: x'), {
    facility: 0,
    level: 4,
    seq: 344,
    tsUs: 448168627,
    lines: ['tail invoked oom-killer: x'],
  })
  t.same(parseKmsgRecord('14,7,100,-,caller=T1;a\\x0ab'), {
    facility: 1,
    level: 6,
    seq: 7,
    tsUs: 100,
    lines: ['a', 'b'],
  })
  t.equal(parseKmsgRecord(' SUBSYSTEM=pci'), undefined)
  t.equal(parseKmsgRecord('garbage'), undefined)
})

t.test('edge cases', async t => {
  t.equal(
    parseOomReport(['foo invoked oom-killer: gfp_mask=0x0, order=0', 'Out of memory and no killable processes...']),
    undefined,
    'no victim, no event',
  )
  // A reader that started mid-report still reports the victim.
  const a = new OomReportAssembler()
  t.same(
    a.push(
      '[ 1.0] Out of memory: Killed process 77 (a-very-long-process-name) total-vm:100kB, anon-rss:10kB, file-rss:2kB, shmem-rss:1kB, UID:0 pgtables:4kB oom_score_adj:0',
    ),
    { pid: 77, process_name: 'a-very-long-pro', rss_kb: 13 },
  )
  // Pre-4.19 format: no oom-kill: line, no shmem-rss, older task-dump columns.
  t.same(
    parseOomReport([
      'x invoked oom-killer: gfp_mask=0x24201ca, order=0, oom_score_adj=0',
      'CPU: 0 PID: 5 Comm: x Not tainted 4.4.0 #1',
      '[ pid ]   uid  tgid total_vm      rss nr_ptes nr_pmds swapents oom_score_adj name',
      '[    5]     0     5     1000      700      10       3        0             0 x',
      '[    6]     0     6     1000      900      10       3        0         -1000 y z',
      'Killed process 5 (x) total-vm:4000kB, anon-rss:2800kB, file-rss:0kB',
    ]),
    {
      pid: 5,
      process_name: 'x',
      rss_kb: 2800,
      top_tasks: [
        { name: 'y z', pid: 6, rss_kb: 3600 },
        { name: 'x', pid: 5, rss_kb: 2800 },
      ],
      trigger_pid: 5,
      trigger_process_name: 'x',
    },
  )
  for (const [c, want] of [
    ['CONSTRAINT_CPUSET', 'cpuset'],
    ['CONSTRAINT_MEMORY_POLICY', 'memory_policy'],
  ] as const) {
    t.equal(
      parseOomReport([
        `oom-kill:constraint=${c},nodemask=0,cpuset=/,mems_allowed=0`,
        'Killed process 1 (a) total-vm:1kB, anon-rss:1kB, file-rss:0kB, shmem-rss:0kB',
      ])?.constraint,
      want,
    )
  }
  t.equal(
    stripLogPrefix('2024-03-14T10:21:07.123456+00:00 vm kernel: node invoked oom-killer: x'),
    'node invoked oom-killer: x',
  )
})
