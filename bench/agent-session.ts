// A synthesized 30-minute agent session, as stored JSON lines: Playwright-like clicks, fills,
// presses, gotos, evaluates and their setup on two tabs, in steps, with the page's own network and
// console traffic after each action (some 500s and console errors among them).
const T0 = Date.UTC(2026, 11, 1) * 1000
const SPAN_US = 30 * 60 * 1_000_000

/** The session as stored JSON lines, in seq order (ts never decreases). */
export function agentSession(COMMANDS: number, EVENTS: number): string[] {
  const out: { ts: number; event: Record<string, unknown> }[] = []
  // A cycle sends 4.5 commands on average (a goto 1, a click 7, a fill 6, a press and an evaluate 4).
  const cycles = Math.ceil(COMMANDS / 4.5)
  const perCycleUs = SPAN_US / cycles
  const eventsPerCycle = Math.round(EVENTS / cycles)
  let commands = 0
  const cmd = (ts: number, target: string, method: string, extra: Record<string, unknown> = {}) => {
    commands++
    out.push({
      ts,
      event: {
        ts,
        type: 'cdp_command',
        category: 'control',
        source: { kind: 'local_process' },
        data: {
          connection_id: 'c0ffee00-0000-4000-8000-000000000001',
          id: commands,
          method,
          session_id: `S-${target}`,
          target_id: target,
          duration_ms: 1.5,
          outcome: commands % 97 === 0 ? 'error' : 'ok',
          request_bytes: 120,
          response_bytes: 300,
          ...extra,
        },
      },
    })
  }
  const page = (ts: number, target: string, type: string, category: string, data: Record<string, unknown>) =>
    out.push({
      ts,
      event: {
        ts,
        type,
        category,
        source: { kind: 'cdp' },
        data: { target_id: target, target_type: 'page', session_id: `S-${target}`, nav_seq: 1, ...data },
      },
    })
  for (const target of ['T-A', 'T-B'])
    for (const m of [
      'Page.enable',
      'Runtime.enable',
      'Network.enable',
      'Page.getFrameTree',
      'Emulation.setFocusEmulationEnabled',
    ])
      cmd(T0, target, m)
  for (let c = 0; c < cycles && commands < COMMANDS; c++) {
    const target = c % 5 === 4 ? 'T-B' : 'T-A'
    let ts = T0 + Math.round(c * perCycleUs) + 1000
    const step = `step-${Math.floor(c / 10)}`
    const next = (ms: number) => (ts += ms * 1000)
    switch (c % 4) {
      case 0:
        cmd(next(20), target, 'Page.navigate', { step_id: step, duration_ms: 20 })
        page(next(1), target, 'page_navigation', 'page', { url: `https://shop.example.com/p/${c}`, frame_id: 'F' })
        break
      case 1:
        for (const m of [
          'Runtime.callFunctionOn',
          'Runtime.callFunctionOn',
          'DOM.scrollIntoViewIfNeeded',
          'DOM.getContentQuads',
        ])
          cmd(next(2), target, m, { step_id: step })
        for (const t of ['mouseMoved', 'mousePressed', 'mouseReleased'])
          cmd(next(2), target, 'Input.dispatchMouseEvent', { step_id: step, input_type: t })
        page(next(1), target, 'interaction_click', 'interaction', {
          x: 10,
          y: 20,
          selector: `#b${c}`,
          tag: 'BUTTON',
          text: 'Buy',
        })
        break
      case 2:
        for (let i = 0; i < 5; i++) cmd(next(2), target, 'Runtime.callFunctionOn', { step_id: step })
        cmd(next(2), target, 'Input.insertText', { step_id: step, input_chars: 12 })
        break
      default:
        cmd(next(2), target, 'Runtime.callFunctionOn', { step_id: step })
        cmd(next(2), target, 'Input.dispatchKeyEvent', {
          step_id: step,
          input_type: 'keyDown',
          input_key: 'Enter',
          input_chars: 1,
        })
        cmd(next(2), target, 'Input.dispatchKeyEvent', { step_id: step, input_type: 'keyUp', input_key: 'Enter' })
        cmd(next(500), target, 'Runtime.evaluate', { step_id: step })
    }
    // The page's own traffic after the action: requests with responses, console lines.
    for (let i = 0; i < eventsPerCycle; i++) {
      next(perCycleUs / 1000 / (eventsPerCycle + 20))
      const id = `${c}.${i >> 1}`
      if (i % 5 === 4)
        page(ts, target, 'console_log', 'console', {
          level: i % 20 === 4 ? 'error' : 'log',
          text: `line ${i}`,
          args: [],
        })
      else if (i % 2 === 0)
        page(ts, target, 'network_request', 'network', {
          request_id: id,
          method: 'GET',
          url: `https://shop.example.com/api/${id}`,
          headers: {},
        })
      else
        page(ts, target, 'network_response', 'network', {
          request_id: id,
          status: i % 50 === 1 ? 500 : 200,
          status_text: 'OK',
          headers: { 'content-type': 'application/json' },
          mime_type: 'application/json',
          body: '{"items":[1,2,3]}',
        })
    }
  }
  out.sort((a, b) => a.ts - b.ts)
  return out.map((e, i) => JSON.stringify({ seq: i + 1, event: e.event }))
}
