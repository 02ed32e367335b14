// Ports a test needs before anything listens on them: one that refuses connections ("connection
// refused" checks), or one a server is started on later (a client configured before its server).
//
// A port from listen(0), closed and handed on, is free only for a moment: the next listen(0) of a
// parallel test can be given the same one. These come from outside the kernel's ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range), which listen(0) never hands out, and every server the
// tests start listens on port 0 (or on a port it bound itself before): no parallel test can take
// them. Each is checked refused before it is handed out (a service of the machine may sit there).
// The two purposes use disjoint bands, so a refused-check port is never one another test serves on.
import { readFileSync } from 'node:fs'
import { connect } from 'node:net'

function ephemeralRange(): [number, number] {
  try {
    const [lo, hi] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number)
    if (lo! > 0 && hi! >= lo!) return [lo!, hi!]
  } catch {
    /* not Linux: the IANA dynamic range */
  }
  return [49152, 65535]
}

/** Resolves true when a connection to 127.0.0.1:port is refused (nothing listens there). */
function refused(port: number): Promise<boolean> {
  return new Promise(resolve => {
    const s = connect({ host: '127.0.0.1', port })
    s.once('connect', () => {
      s.destroy()
      resolve(false)
    })
    s.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'))
  })
}

/** Candidate bands outside the ephemeral range, above 1023: [from, to] each. */
function bands(): [[number, number], [number, number]] {
  const [lo, hi] = ephemeralRange()
  // Above the range when there is room for two bands of 500, else below it.
  if (65535 - hi >= 1000) {
    const mid = hi + 1 + Math.floor((65535 - hi) / 2)
    return [
      [hi + 1, mid - 1],
      [mid, 65535],
    ]
  }
  const mid = 1024 + Math.floor((lo - 1024) / 2)
  return [
    [1024, mid - 1],
    [mid, lo - 1],
  ]
}

async function pick([from, to]: [number, number]): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const port = from + Math.floor(Math.random() * (to - from + 1))
    if (await refused(port)) return port
  }
  throw new Error(`no refusing port found in ${from}-${to}`)
}

/** A 127.0.0.1 port nothing listens on, now or later (for "connection refused"). */
export function closedPort(): Promise<number> {
  return pick(bands()[0])
}

/** A 127.0.0.1 port nothing listens on yet, for a server the test starts on it later. */
export function reservedPort(): Promise<number> {
  return pick(bands()[1])
}
