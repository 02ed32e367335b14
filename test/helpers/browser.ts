// Real headless Chromium for tests (the same launcher and flags as the daemon's --launch mode).
import { launchChromium, type LaunchedBrowser, type LaunchOptions } from '../../src/monitor/launch.js'
import type { Test } from 'tap'

export async function startBrowser(t: Test, opts: LaunchOptions = {}): Promise<LaunchedBrowser> {
  const browser = await launchChromium(opts)
  t.teardown(() => browser.close())
  return browser
}
