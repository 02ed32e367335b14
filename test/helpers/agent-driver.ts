// A daemon in process (its own headless Chromium, its CDP proxy) driven by Playwright through the
// proxy, as an agent drives it: what the browser tests of actions and traces share.
import type { Test } from 'tap'
import { chromium, type Browser, type Page } from 'playwright-core'
import { parseServeConfig } from '../../src/config/config.js'
import { silentLogger } from '../../src/log.js'
import { startDaemon } from '../../src/main.js'
import type { Envelope } from '../../src/events/index.js'

export type Daemon = Awaited<ReturnType<typeof startDaemon>>

/** `serve` with these flags (listen, proxy and data dir are the caller's), stopped at teardown. */
export async function startTestDaemon(t: Test, flags: string[]): Promise<{ d: Daemon; stored(): Promise<Envelope[]> }> {
  const d = await startDaemon(parseServeConfig(flags, {}), {
    logger: silentLogger,
    announce: () => {},
    showNewToken: false,
  })
  t.teardown(() => d.close())
  return {
    d,
    /** Every stored envelope, oldest first. */
    async stored() {
      const page = await d.log.read({ order: 'asc', cursor: 1, limit: 100_000 })
      return page.records.map(r => JSON.parse(r.json) as Envelope)
    },
  }
}

/** Playwright on the daemon's proxy with a new page; agent steps marked over its own CDP socket. */
export async function driveThroughProxy(d: Daemon): Promise<{
  pw: Browser
  page: Page
  startStep(name: string): Promise<string>
  endStep(stepId: string, end?: { outcome: 'ok' | 'error'; errorMessage?: string }): Promise<void>
}> {
  const pw = await chromium.connectOverCDP(`http://127.0.0.1:${d.proxy!.address().port}`)
  const page = await pw.contexts()[0]!.newPage()
  const cdp = await pw.newBrowserCDPSession()
  const send = (cdp.send as unknown as (m: string, p: object) => Promise<{ stepId: string }>).bind(cdp)
  return {
    pw,
    page,
    startStep: async name => (await send('BrowserTelemetry.startStep', { name })).stepId,
    endStep: async (stepId, end) => {
      await send('BrowserTelemetry.endStep', { stepId, ...end })
    },
  }
}
