// One self-overwriting status line on stderr while a long read or upload runs; silent unless stderr
// is a terminal, so logs and pipes never see it.
import type { OutStream } from './io.js'

export interface Progress {
  update(text: string): void
  done(): void
}

const NOOP: Progress = { update() {}, done() {} }

export function progress(err: OutStream, intervalMs = 100): Progress {
  if (err.isTTY !== true) return NOOP
  let last = 0
  let shown = false
  return {
    update(text) {
      const now = Date.now()
      if (now - last < intervalMs) return
      last = now
      shown = true
      err.write(`\r\x1b[2K${text}`)
    },
    done() {
      if (shown) err.write('\r\x1b[2K')
      shown = false
    },
  }
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`
  if (n < 1024 ** 3) return `${(n / 1024 / 1024).toFixed(1)} MiB`
  return `${(n / 1024 ** 3).toFixed(2)} GiB`
}
