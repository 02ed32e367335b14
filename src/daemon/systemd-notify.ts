// sd_notify for Type=notify units. Node cannot send unix datagrams, so we run `systemd-notify`
// (a child, hence NotifyAccess=all in the unit). systemd-notify waits on a notification barrier
// until PID 1 has processed the message, so the message cannot be lost to the sender exiting first.
// Outside systemd (NOTIFY_SOCKET unset) every call is a no-op.
import { execFile } from 'node:child_process'

export interface NotifyOptions {
  env?: NodeJS.ProcessEnv
  /** The systemd-notify binary (tests substitute a fake). */
  bin?: string
  /** Give up after this long (default 10 s); systemd-notify blocks until PID 1 acknowledged. */
  timeoutMs?: number
}

/**
 * Sends `KEY=VALUE` assignments to the service manager. Resolves true when systemd-notify succeeded,
 * false when not under systemd or when it failed (never throws: readiness reporting must not kill the daemon).
 */
export function sdNotify(assignments: Record<string, string>, opts: NotifyOptions = {}): Promise<boolean> {
  const env = opts.env ?? process.env
  if (!env.NOTIFY_SOCKET) return Promise.resolve(false)
  const args = Object.entries(assignments).map(([k, v]) => `${k}=${v.replace(/\n/g, ' ')}`)
  return new Promise(resolve => {
    execFile(opts.bin ?? 'systemd-notify', args, { env, timeout: opts.timeoutMs ?? 10_000 }, err => resolve(!err))
  })
}

/** Call once the event log is open and the API listens. */
export function notifyReady(status = 'serving', opts: NotifyOptions = {}): Promise<boolean> {
  return sdNotify({ READY: '1', STATUS: status, MAINPID: String(process.pid) }, opts)
}

/** Call when graceful shutdown starts (systemd then shows "deactivating" instead of a crash). */
export function notifyStopping(status = 'shutting down', opts: NotifyOptions = {}): Promise<boolean> {
  return sdNotify({ STOPPING: '1', STATUS: status }, opts)
}
