// What happened to the page, against real Chromium through the Monitor: a renderer crash, dialogs
// answered by another client (and one nobody answers), a download, WebSocket traffic with a local
// echo server (text, binary, a 2 MB frame) and EventSource messages. The daemon only observes.
import t from 'tap'
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { WebSocketServer } from 'ws'
import CDP from 'chrome-remote-interface'
import { startServer, waitFor } from './helpers/http.js'
import { startCollecting } from './helpers/collector-harness.js'
import { createPageCollector } from '../collectors/page.js'
import { createNetworkCollector } from '../collectors/network.js'
import { DIALOG_MESSAGE_MAX_BYTES } from '../collectors/page.js'
import type { EventData } from '../src/events/index.js'
import { toHar } from '../src/har/index.js'
import harValidator from 'har-validator'

const BODY_CAP = 64 * 1024

t.test('crash, dialogs, downloads, sockets', async t => {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, maxPayload: 8 * 1024 * 1024 })
  wss.on('connection', ws => ws.on('message', (data, binary) => ws.send(data, { binary })))
  t.teardown(() => new Promise<void>(r => wss.close(() => r())))
  await new Promise<void>(r => wss.once('listening', () => r()))
  const wsPort = (wss.address() as { port: number }).port
  const download = Buffer.alloc(12345, 7)
  const server = await startServer(t, {
    '/page': '<title>p</title><a id="dl" href="/file" download>file</a>',
    '/file': (_q, s) => {
      s.writeHead(200, {
        'content-type': 'application/octet-stream',
        'content-disposition': 'attachment; filename="report.bin"',
      })
      s.end(download)
    },
    '/sse': (_q, s) => {
      s.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
      s.write('event: tick\nid: 1\ndata: {"n":1,"token":"sse-Sekret"}\n\n')
      s.write('data: plain message\n\n')
      s.end('event: done\nid: 3\ndata: bye\n\n')
    },
  })
  const h = await startCollecting(t, [createPageCollector(), createNetworkCollector({ bodyMaxBytes: BODY_CAP })])
  // Another client stands in for the agent: it answers dialogs and decides where downloads go.
  const agent = await CDP({ target: h.browser.wsUrl, local: true })
  t.teardown(() => agent.close())

  await t.test(
    'dialogs: opened/closed pairs with the results another client gave; none answered by the daemon',
    async t => {
      const tab = await h.openTab(`${server.url}page`)
      await waitFor(() => h.ofType('page_load', h.forTarget(tab))[0], 10_000, 'load')
      const { sessionId } = await agent.send('Target.attachToTarget', { targetId: tab.targetId, flatten: true })
      await agent.send('Page.enable', undefined, sessionId)
      const events = agent as unknown as NodeJS.EventEmitter
      const answer = (accept: boolean, promptText?: string) =>
        new Promise<void>(resolve => {
          events.once(`Page.javascriptDialogOpening.${sessionId}`, () => {
            void agent.send('Page.handleJavaScriptDialog', { accept, promptText }, sessionId).then(() => resolve())
          })
        })
      const long = 'm'.repeat(DIALOG_MESSAGE_MAX_BYTES + 100)
      for (const [expr, accept, input] of [
        [`alert(${JSON.stringify(long)})`, true, undefined],
        ['confirm("sure?")', false, undefined],
        ['prompt("your pin?", "0000")', true, 'pin-Sekret-1234'],
      ] as const) {
        const answered = answer(accept, input)
        const evaluated = tab.send('Runtime.evaluate', { expression: expr, userGesture: true })
        await answered
        await evaluated
      }
      await waitFor(() => h.ofType('page_dialog_closed', h.forTarget(tab)).length === 3, 10_000, 'three closed')
      const opened = h.ofType('page_dialog_opened', h.forTarget(tab)).map(e => e.data)
      const closed = h.ofType('page_dialog_closed', h.forTarget(tab)).map(e => e.data)
      t.same(
        opened.map(d => [d.dialog_type, d.message.length]),
        [
          ['alert', DIALOG_MESSAGE_MAX_BYTES],
          ['confirm', 5],
          ['prompt', 9],
        ],
        'types in order, the long message cut to the cap',
      )
      t.ok(opened.every(d => d.url === `${server.url}page` && d.target_id === tab.targetId && d.nav_seq === 1))
      t.same(
        closed.map(d => [d.result, d.user_input]),
        [
          [true, undefined],
          [false, undefined],
          [true, '[redacted:16]'],
        ],
        'results as the client answered; typed input masked',
      )
      const stored = JSON.stringify(await h.stored())
      t.notOk(stored.includes('pin-Sekret-1234'), 'the typed prompt answer is stored nowhere')

      // A dialog nobody answers stays open: the daemon never closes it. Shown by the client's own
      // answer: Chromium takes it only for a dialog still showing ("No dialog is showing" otherwise),
      // and the daemon, which saw the dialog open before the client answers, would have answered first.
      void tab.send('Runtime.evaluate', { expression: 'alert("left open")', userGesture: true }).catch(() => undefined)
      await waitFor(() => h.ofType('page_dialog_opened', h.forTarget(tab)).length === 4, 10_000, 'fourth dialog')
      t.equal(h.ofType('page_dialog_closed', h.forTarget(tab)).length, 3, 'still open: no page_dialog_closed')
      const clientAnswer = await agent.send('Page.handleJavaScriptDialog', { accept: true }, sessionId).then(
        () => 'answered',
        (err: Error) => err.message,
      )
      t.equal(clientAnswer, 'answered', 'still showing when the client answered it')
      await waitFor(() => h.ofType('page_dialog_closed', h.forTarget(tab)).length === 4, 10_000, 'closed by the client')
      t.same(
        h.ofType('page_dialog_closed', h.forTarget(tab)).map(e => e.data.result),
        [true, false, true, true],
        'closed once, as the client answered',
      )
    },
  )

  await t.test('a download: started and finished with its size, saved where the client said', async t => {
    const dir = await mkdtemp(join(tmpdir(), 'bt-dl-'))
    t.teardown(() => rm(dir, { recursive: true, force: true }))
    await agent.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: dir })
    const tab = await h.openTab(`${server.url}page`)
    await waitFor(() => h.ofType('page_load', h.forTarget(tab))[0], 10_000, 'load')
    await tab.send('Runtime.evaluate', { expression: 'document.getElementById("dl").click()', userGesture: true })
    const finished = await h.waitEvent('page_download_finished', h.forTarget(tab), 20_000)
    const started = h.ofType('page_download_started', h.forTarget(tab))
    t.equal(started.length, 1)
    t.match(started[0]!.data, { url: `${server.url}file`, suggested_filename: 'report.bin' })
    t.same(
      [finished.data.guid, finished.data.state, finished.data.total_bytes],
      [started[0]!.data.guid, 'completed', download.length],
    )
    const saved = await waitFor(async () => (await readdir(dir)).find(f => !f.endsWith('.crdownload')), 10_000, 'file')
    t.equal((await stat(join(dir, saved))).size, download.length, 'the file is where the client asked, whole')
  })

  await t.test('WebSocket: created, handshake, frames both ways with the cap, binary summarised, closed', async t => {
    const tab = await h.openTab(`${server.url}page`)
    await waitFor(() => h.ofType('page_load', h.forTarget(tab))[0], 10_000, 'load')
    const big = 2 * 1024 * 1024
    const echoed = await h.evaluate(
      tab,
      `new Promise((resolve, reject) => {
        const ws = new WebSocket('ws://127.0.0.1:${wsPort}/chat?token=ws-Sekret')
        ws.binaryType = 'arraybuffer'
        let got = 0
        ws.onopen = () => {
          ws.send(JSON.stringify({ hello: 'world', password: 'frame-Sekret' }))
          ws.send(new Uint8Array(1000))
          ws.send('x'.repeat(${big}))
        }
        ws.onmessage = () => { if (++got === 3) ws.close() }
        ws.onclose = () => resolve(got)
        ws.onerror = () => reject(new Error('socket error'))
      })`,
    )
    t.equal(echoed, 3, 'the page got its three echoes')
    await h.waitEvent('network_websocket_closed', h.forTarget(tab), 10_000)
    const created = h.ofType('network_websocket_created', h.forTarget(tab))
    t.equal(created.length, 1)
    const id = created[0]!.data.request_id
    t.equal(
      created[0]!.data.url,
      `ws://127.0.0.1:${wsPort}/chat?token=ws-Sekret`,
      'the socket URL (masked when stored)',
    )
    const hs = h.ofType('network_websocket_handshake', h.forTarget(tab))
    t.equal(hs.length, 1)
    t.equal(hs[0]!.data.status, 101)
    t.ok(Object.keys(hs[0]!.data.request_headers).length > 0 && Object.keys(hs[0]!.data.response_headers).length > 0)
    const storedEnvelopes = await h.stored()
    const frames = storedEnvelopes
      .filter(e => e.event.type === 'network_websocket_frame')
      .map(e => e.event.data as EventData<'network_websocket_frame'>)
      .filter(f => f.request_id === id)
    const textBytes = Buffer.byteLength(JSON.stringify({ hello: 'world', password: 'frame-Sekret' }))
    for (const direction of ['sent', 'received'] as const) {
      const mine = frames.filter(f => f.direction === direction)
      t.same(
        mine.map(f => [f.opcode, f.payload_bytes, f.truncated]),
        [
          [1, textBytes, undefined],
          [2, 1000, undefined],
          [1, big, true],
        ],
        `three frames ${direction}, in order`,
      )
      t.same(JSON.parse(mine[0]!.payload), { hello: 'world', password: '[redacted:16]' }, 'JSON frames redacted')
      t.equal(mine[1]!.payload, '[binary, 1000 bytes]')
      t.equal(Buffer.byteLength(mine[2]!.payload), BODY_CAP, 'the 2 MB frame cut to the body cap')
    }
    const stored = JSON.stringify(storedEnvelopes)
    for (const s of ['ws-Sekret', 'frame-Sekret']) t.notOk(stored.includes(s), `${s} stored nowhere`)
    // HAR: the handshake entry carries the messages, as Chrome DevTools exports them.
    const har = toHar(storedEnvelopes)
    const entry = har.log.entries.find(e => e._resourceType === 'websocket' && e._requestId === id)!
    t.equal(entry.response.status, 101)
    t.match(entry.request.url, /^ws:\/\/127\.0\.0\.1:\d+\/chat\?token=\[redacted:\d+\]$/)
    t.same(
      entry._webSocketMessages!.map(m => [m.type, m.opcode]),
      frames.map(f => [f.direction === 'sent' ? 'send' : 'receive', f.opcode]),
      'every frame, in order',
    )
    t.ok(await harValidator.har(har), 'valid HAR 1.2')
  })

  await t.test('EventSource: every message with its name and id', async t => {
    const tab = await h.openTab(`${server.url}page`)
    await waitFor(() => h.ofType('page_load', h.forTarget(tab))[0], 10_000, 'load')
    await h.evaluate(
      tab,
      `new Promise(resolve => {
        const es = new EventSource('/sse')
        let n = 0
        const done = () => { if (++n === 3) { es.close(); resolve(n) } }
        es.addEventListener('tick', done); es.onmessage = done; es.addEventListener('done', done)
      })`,
    )
    await waitFor(() => h.ofType('network_eventsource_message', h.forTarget(tab)).length === 3, 10_000, 'messages')
    const msgs = (await h.stored())
      .filter(e => e.event.type === 'network_eventsource_message')
      .map(e => e.event.data as EventData<'network_eventsource_message'>)
    t.same(
      msgs.map(m => [m.event_name, m.event_id, m.url]),
      [
        ['tick', '1', `${server.url}sse`],
        ['message', '1', `${server.url}sse`],
        ['done', '3', `${server.url}sse`],
      ],
    )
    t.same(JSON.parse(msgs[0]!.data), { n: 1, token: '[redacted:16]' }, 'data redacted like a body')
    t.equal(msgs[1]!.data, 'plain message')
  })

  await t.test('Page.crash: one page_crashed with its context; the other tabs are still watched', async t => {
    const victim = await h.openTab(`${server.url}page`)
    const bystander = await h.openTab(`${server.url}page`)
    await waitFor(() => h.ofType('page_load', h.forTarget(victim))[0], 10_000, 'victim load')
    await waitFor(() => h.ofType('page_load', h.forTarget(bystander))[0], 10_000, 'bystander load')
    await victim.send('Page.crash').catch(() => undefined)
    const crash = await h.waitEvent('page_crashed', e => e.data.target_id === victim.targetId, 10_000)
    t.match(crash.data, {
      target_id: victim.targetId,
      target_type: 'page',
      url: `${server.url}page`,
      nav_seq: 1,
      status: /\S/,
    })
    t.type(crash.data.error_code, 'number')
    t.equal(h.ofType('page_crashed').length, 1, 'exactly one')
    const before = h.ofType('page_navigation', h.forTarget(bystander)).length
    await bystander.send('Page.navigate', { url: `${server.url}page?again` })
    await waitFor(
      () => h.ofType('page_navigation', h.forTarget(bystander)).length > before,
      10_000,
      'the bystander still reports',
    )
  })
})
