// Hand-built envelopes of an agent's session: commands through the CDP proxy, steps, and what the
// page reported, each validated against its schema. Times are milliseconds after T0 (an envelope's
// ts is T0 + at); a command's duration ends at its envelope's ts, as the proxy stores it.
import { validateEvent, type Envelope, type EventData, type TelemetryEvent } from '../../src/events/index.js'

export const T0 = 1_700_000_000_000_000
/** Unix µs of a moment `ms` after T0. */
export const at = (ms: number) => T0 + Math.round(ms * 1000)

export type CommandOpts = Partial<EventData<'cdp_command'>> & { dur?: number }

const CATEGORY: Record<string, string> = {
  cdp_command: 'control',
  agent_step_started: 'control',
  agent_step_finished: 'control',
}
function categoryOf(type: string): string {
  return CATEGORY[type] ?? type.split('_')[0]!
}

/** Builds envelopes with increasing seqs (from 1, or from `first`). */
export class SessionBuilder {
  readonly envelopes: Envelope[] = []
  constructor(
    private seq = 0,
    readonly defaults: { connection_id: string; target_id?: string } = { connection_id: 'C1', target_id: 'T1' },
  ) {}

  /** The seq the next envelope takes. */
  get next(): number {
    return this.seq + 1
  }

  event(type: string, ms: number, data: Record<string, unknown>): number {
    const event = {
      ts: at(ms),
      type,
      category: categoryOf(type),
      source: { kind: type.startsWith('cdp_') || type.startsWith('agent_') ? 'local_process' : 'cdp' },
      data,
    } as unknown as TelemetryEvent
    const issues = validateEvent(event)
    if (issues.length) throw new Error(`test event ${type} invalid: ${JSON.stringify(issues)}`)
    this.envelopes.push({ seq: ++this.seq, event })
    return this.seq
  }

  /** A cdp_command answered at `ms` after `dur` ms (default 1); target T1 unless `target_id: undefined`. */
  cmd(ms: number, method: string, o: CommandOpts = {}): number {
    const { dur = 1, ...rest } = o
    const data: Record<string, unknown> = {
      ...this.defaults,
      id: this.seq + 1,
      method,
      duration_ms: dur,
      outcome: 'ok',
      request_bytes: 50,
      ...rest,
    }
    for (const k of Object.keys(data)) if (data[k] === undefined) delete data[k]
    return this.event('cdp_command', ms, data)
  }

  /** A page-side event of target T1 (or data.target_id) with the page context. */
  page(type: string, ms: number, data: Record<string, unknown> = {}): number {
    return this.event(type, ms, { target_id: 'T1', target_type: 'page', session_id: 'S1', ...data })
  }
}

const req = (id: string) => ({ request_id: id, method: 'GET', url: `http://shop/${id}`, headers: {} })

/** A Playwright-like session on one page: setup, goto, click, fill, press, evaluate, screenshot... */
export function shopSession(): SessionBuilder {
  const s = new SessionBuilder()
  s.cmd(10, 'Browser.getVersion', { target_id: undefined }) // 1
  s.cmd(12, 'Target.setAutoAttach', { target_id: undefined }) // 2
  s.cmd(20, 'Page.enable', { dur: 2 }) // 3
  s.cmd(22, 'Runtime.enable') // 4
  s.cmd(30, 'Runtime.runIfWaitingForDebugger') // 5
  s.page('page_navigation', 100, { url: 'http://shop/checkout?step=1', frame_id: 'F1' }) // 6
  s.cmd(105, 'Page.navigate', { dur: 10 }) // 7
  s.page('network_request', 110, req('doc')) // 8
  s.page('page_navigation_settled', 130) // 9
  s.page('network_request', 140, req('late')) // 10: after the settle, before the next action
  s.cmd(150, 'Page.createIsolatedWorld', { dur: 2 }) // 11: a late setup command
  s.cmd(202, 'Runtime.callFunctionOn', { dur: 2 }) // 12
  s.cmd(205, 'DOM.describeNode') // 13
  s.cmd(210, 'DOM.getContentQuads') // 14
  s.cmd(212, 'Input.dispatchMouseEvent', { input_type: 'mouseMoved' }) // 15
  s.cmd(214, 'Input.dispatchMouseEvent', { input_type: 'mousePressed' }) // 16
  s.page('interaction_click', 216, { x: 5, y: 6, selector: '#buy', tag: 'BUTTON', text: 'Buy' }) // 17
  s.cmd(217, 'Input.dispatchMouseEvent', { input_type: 'mouseReleased', dur: 2 }) // 18
  s.page('console_log', 230, { level: 'error', text: 'boom', args: ['boom'] }) // 19
  s.page('network_request', 235, req('api')) // 20
  s.page('network_response', 240, {
    request_id: 'api',
    status: 404,
    status_text: 'Not Found',
    headers: {},
    mime_type: 'text/plain',
  }) // 21
  s.cmd(300, 'Runtime.callFunctionOn', { dur: 3 }) // 22
  s.cmd(305, 'Input.insertText', { input_chars: 12, dur: 2 }) // 23
  s.cmd(400, 'Input.dispatchKeyEvent', { input_type: 'keyDown', input_key: 'Enter', input_chars: 1 }) // 24
  s.page('interaction_key', 401, { key: 'Enter', selector: '#email', tag: 'INPUT' }) // 25
  s.cmd(402, 'Input.dispatchKeyEvent', { input_type: 'keyUp', input_key: 'Enter' }) // 26
  s.page('network_loading_failed', 410, { request_id: 'x', error_text: 'net::ERR_FAILED', canceled: false }) // 27
  s.page('page_dialog_opened', 411, { dialog_type: 'alert', message: 'hi', has_browser_handler: false }) // 28
  s.cmd(500, 'Runtime.evaluate', { dur: 5 }) // 29
  s.cmd(501, 'Runtime.releaseObject', { dur: 0.5 }) // 30
  s.cmd(2000, 'Page.captureScreenshot', { dur: 20 }) // 31
  s.cmd(2100, 'Network.getResponseBody', { outcome: 'error', error_code: -32000, error_message: 'No data' }) // 32
  s.cmd(3000, 'Input.dispatchMouseEvent', { input_type: 'mouseWheel' }) // 33
  s.page('interaction_scroll_settled', 3200, { from_x: 0, from_y: 0, to_x: 0, to_y: 900, target_selector: 'html' }) // 34
  s.page('page_download_started', 3250, { guid: 'g', suggested_filename: 'a.pdf' }) // 35
  s.page('page_crashed', 3300, { status: 'crashed' }) // 36
  return s
}

/** A 10-step script: setup, then per step a console line and a click (step 3 logs an error after it, step 5 holds a
 * nested step that fills a field, step 9 never finishes), a late setup command between steps. */
export function tenStepSession(): SessionBuilder {
  const s = new SessionBuilder()
  s.cmd(10, 'Page.enable')
  s.cmd(12, 'Runtime.enable')
  for (let i = 0; i < 10; i++) {
    const t0 = 1000 * (i + 1)
    const step = `S${i}`
    s.event('agent_step_started', t0, { step_id: step, name: `step ${i}`, via: 'http' })
    s.page('console_log', t0 + 5, { level: 'log', text: `step ${i} log`, args: [`step ${i} log`] })
    s.cmd(t0 + 10, 'Runtime.callFunctionOn', { step_id: step })
    s.cmd(t0 + 12, 'Input.dispatchMouseEvent', { input_type: 'mousePressed', step_id: step })
    s.cmd(t0 + 14, 'Input.dispatchMouseEvent', { input_type: 'mouseReleased', step_id: step })
    s.page('interaction_click', t0 + 15, { x: 1, y: 2, selector: `#b${i}`, tag: 'BUTTON', text: '' })
    if (i === 3) s.page('console_error', t0 + 20, { text: 'boom' })
    if (i === 4) s.cmd(t0 + 300, 'Page.createIsolatedWorld')
    if (i === 5) {
      s.event('agent_step_started', t0 + 400, {
        step_id: 'S5a',
        name: 'fill the form',
        parent_step_id: step,
        via: 'http',
      })
      s.cmd(t0 + 410, 'Runtime.callFunctionOn', { step_id: 'S5a' })
      s.cmd(t0 + 412, 'Input.insertText', { input_chars: 5, step_id: 'S5a' })
      s.page('network_loading_failed', t0 + 420, { request_id: 'r', error_text: 'net::ERR_FAILED', canceled: false })
      s.event('agent_step_finished', t0 + 500, {
        step_id: 'S5a',
        name: 'fill the form',
        parent_step_id: step,
        via: 'http',
        outcome: 'error',
        error_message: 'not saved',
        duration_ms: 100,
      })
    }
    if (i < 9)
      s.event('agent_step_finished', t0 + 900, {
        step_id: step,
        name: `step ${i}`,
        via: 'http',
        outcome: 'ok',
        duration_ms: 900,
      })
  }
  return s
}
