// What weakens the launched browser's isolation, in words for /healthz and the log.

export interface Isolation {
  /** Whether the running browser has its sandbox. */
  sandboxed: boolean
  /** Why the sandbox could not start, when it was tried and failed. */
  sandboxFallback?: string
  /** The browser runs as the daemon's own user (launch mode without --chromium-user taking effect). */
  sharesDaemonUser: boolean
}

export function isolationWarnings(i: Isolation): string[] {
  const out: string[] = []
  if (!i.sandboxed)
    out.push(
      `Chromium runs with --no-sandbox (${i.sandboxFallback !== undefined ? `its sandbox cannot start: ${i.sandboxFallback}` : 'it would run as root, or --no-sandbox was asked for'}): a renderer exploit gets the browser's user`,
    )
  if (i.sharesDaemonUser)
    out.push(
      "Chromium runs as the daemon's own user: the CDP proxy refuses file: URLs and data-dir paths, but a compromised browser can read the token and the log; give Chromium its own user (docs/operations.md)",
    )
  return out
}
