// Console collector against real Chromium through the Monitor: exact console_log / console_error data.
import t from 'tap'
import { startServer } from './helpers/http.js'
import { startCollecting } from './helpers/collector-harness.js'
import { createConsoleCollector } from '../collectors/console.js'
import { createPageCollector } from '../collectors/page.js'

t.test('console_log, console_error (call and uncaught exceptions) with exact fields and context', async t => {
  const server = await startServer(t, {
    '/logs': `<script>
function logAll() {
  console.log('hello', 1, {a: 1, b: 'x'}, [1, 2], null, undefined, true)
  console.warn('careful')
  console.info('fyi', 2n)
  console.debug('dbg')
  console.error('bad', {code: 7})
}
logAll()
</script>`,
    '/logged': `<script>
function makeSpec() { return null.paths }
function loadSpec() {
  try { makeSpec() } catch (e) { console.error(e) }
}
loadSpec()
function YamlError(reason) { this.name = 'YAMLException'; this.message = reason; Error.captureStackTrace(this, YamlError) }
YamlError.prototype = Object.create(Error.prototype)
function parseYaml() { throw new YamlError('bad indent') }
function loadYaml() { try { parseYaml() } catch (e) { console.error(e) } }
loadYaml()
</script>`,
    '/lib.js': (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/javascript' })
      res.end('function libFail() { return undefined.x }')
    },
    '/from-lib': `<script src="/lib.js"></script><script>
function useLib() { try { libFail() } catch (e) { console.error(e) } }
useLib()
</script>`,
    '/throws': `<script>
function boom() { throw new Error('boom') }
setTimeout(boom, 0)
Promise.reject(new TypeError('nope'))
</script>`,
  })
  const h = await startCollecting(t, [createConsoleCollector(), createPageCollector()])
  const page = h.firstPage()
  await h.navigate(page, `${server.url}logs`)
  const ctx = page.context()
  t.equal(ctx.nav_seq, 1)

  const hello = await h.waitEvent('console_log', e => e.data.text === 'hello')
  const { stack_trace: helloStack, ...helloData } = hello.data
  t.same(helloData, {
    ...ctx,
    level: 'log',
    text: 'hello',
    args: ['hello', '1', '{a: 1, b: "x"}', '[1, 2]', 'null', 'undefined', 'true'],
  })
  t.same(hello.source, { kind: 'cdp', event: 'Runtime.consoleAPICalled' })
  t.match(helloStack, {
    callFrames: [
      { functionName: 'logAll', url: `${server.url}logs`, lineNumber: 2 },
      { functionName: '', url: `${server.url}logs` },
    ],
  })
  t.type(helloStack!.callFrames[0]!.columnNumber, 'number')

  await h.waitEvent('console_error', e => e.data.text === 'bad') // the last call of logAll()
  const levels = h.ofType('console_log', e => e.data.nav_seq === 1).map(e => [e.data.level, e.data.text, e.data.args])
  t.same(
    levels,
    [
      ['log', 'hello', ['hello', '1', '{a: 1, b: "x"}', '[1, 2]', 'null', 'undefined', 'true']],
      ['warning', 'careful', ['careful']],
      ['info', 'fyi', ['fyi', '2n']],
      ['debug', 'dbg', ['dbg']],
    ],
    'every level but error, passed through unfiltered',
  )

  const callError = await h.waitEvent('console_error', e => e.data.text === 'bad')
  const { stack_trace: errStack, ...errData } = callError.data
  t.same(
    errData,
    { ...ctx, text: 'bad', level: 'error', args: ['bad', '{code: 7}'] },
    'no line/column/source_url for a console.error call',
  )
  t.match(errStack, { callFrames: [{ functionName: 'logAll' }] })
  t.equal(h.ofType('console_log', e => e.data.level === 'error').length, 0, 'error is routed to console_error only')

  // console.error(e) in a catch: where the error was made first, where it was logged second.
  await h.navigate(page, `${server.url}logged`)
  const logged = await h.waitEvent('console_error', e => e.data.nav_seq === page.context().nav_seq)
  // An error class of a library's own (js-yaml's, its stack from Error.captureStackTrace): not an
  // Error, but it carries the stack of one.
  const likeError = await h.waitEvent(
    'console_error',
    e => e.data.nav_seq === page.context().nav_seq && e.seq !== logged.seq,
  )
  const where = (st: typeof logged.data.stack_trace) => {
    const out: string[] = []
    for (let s = st; s; s = s.parent)
      out.push(
        `${s.description ?? ''}: ${s.callFrames.map(f => `${f.functionName}@${f.lineNumber}:${f.columnNumber}`).join(' ')}`,
      )
    return out
  }
  t.same(
    where(logged.data.stack_trace),
    [
      "TypeError: Cannot read properties of null (reading 'paths'): makeSpec@1:34 loadSpec@3:8 @5:0",
      'console.error: loadSpec@3:41 @5:0',
    ],
    'the logged error own stack (0-based positions, as CDP gives them), then the console call site',
  )
  t.same(
    where(likeError.data.stack_trace),
    ['YAMLException: bad indent: parseYaml@8:29 loadYaml@9:28 @10:0', 'console.error: loadYaml@9:62 @10:0'],
    "an error-like object's own stack, read in the page, then the call site",
  )
  // Frames read from the error's stack text carry the id of the script Chromium named for their URL.
  const callSiteScript = logged.data.stack_trace!.parent!.callFrames[0]!.scriptId
  t.match(callSiteScript, /^\d+$/, "the call site's frame: Chromium's script id")
  t.same(
    logged.data.stack_trace!.callFrames.map(f => f.scriptId),
    [callSiteScript, callSiteScript, callSiteScript],
    'the parsed frames: the same inline script',
  )
  // A script no frame of Chromium's has named yet: "" (the field is always there).
  await h.navigate(page, `${server.url}from-lib`)
  const fromLib = await h.waitEvent('console_error', e => e.data.nav_seq === page.context().nav_seq)
  t.same(
    fromLib.data.stack_trace!.callFrames.map(f => [f.functionName, f.url.slice(server.url.length), f.scriptId]),
    [
      ['libFail', 'lib.js', ''],
      ['useLib', 'from-lib', fromLib.data.stack_trace!.parent!.callFrames[0]!.scriptId],
      ['', 'from-lib', fromLib.data.stack_trace!.parent!.callFrames[0]!.scriptId],
    ],
  )

  await h.navigate(page, `${server.url}throws`)
  const ctx2 = page.context()
  const uncaught = await h.waitEvent('console_error', e => e.data.text === 'Uncaught Error: boom')
  const { stack_trace: exStack, ...exData } = uncaught.data
  // line and column are CDP's 0-based position of the throw (`new Error` on the script's second line).
  t.same(exData, { ...ctx2, text: 'Uncaught Error: boom', line: 1, column: 24, source_url: `${server.url}throws` })
  t.same(uncaught.source, { kind: 'cdp', event: 'Runtime.exceptionThrown' })
  t.match(exStack, {
    callFrames: [{ functionName: 'boom', url: `${server.url}throws`, lineNumber: 1, columnNumber: 24 }],
  })
  const rejected = await h.waitEvent('console_error', e => e.data.text.startsWith('Uncaught (in promise)'))
  t.equal(rejected.data.text, 'Uncaught (in promise) TypeError: nope')
  t.equal(rejected.data.source_url, `${server.url}throws`)
  t.equal(rejected.data.line, 3)
  t.notOk('level' in rejected.data || 'args' in rejected.data, 'call-only fields absent for exceptions')

  // What was accepted is also what readers get: committed and readable, byte-identical data.
  const stored = await h.stored()
  const storedHello = stored.find(e => e.seq === hello.seq)
  t.same(storedHello?.event.data, hello.data)
  t.equal(h.pipeline.stats.invalid, 0, 'no event was dropped as invalid')
})

t.test('console of a worker keeps the worker session context', async t => {
  const server = await startServer(t, {
    '/w': `<script>new Worker('/w.js')</script>`,
    '/w.js': (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/javascript' })
      res.end("console.log('from worker', {n: 1})")
    },
  })
  const h = await startCollecting(t, [createConsoleCollector()])
  const page = h.firstPage()
  await page.send('Page.navigate', { url: `${server.url}w` })
  const e = await h.waitEvent('console_log', x => x.data.text === 'from worker')
  const worker = h.sessions.find(s => s.targetType === 'worker')!
  const { stack_trace: _s, ...data } = e.data
  t.same(data, { ...worker.context(), level: 'log', text: 'from worker', args: ['from worker', '{n: 1}'] })
  t.equal(data.target_type, 'worker')
  t.equal(data.session_id, worker.sessionId)
})
