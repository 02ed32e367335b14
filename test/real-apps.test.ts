// Real third-party apps from npm (swagger-ui, monaco-editor, jsoneditor), served from 127.0.0.1
// and driven through the daemon's CDP proxy by Playwright as an agent drives them, in steps. The
// record is judged where a reader looks first: console errors (Playwright's own listeners are the
// ground truth) stored once each, with the logged error's own stack mapped exactly as
// @jridgewell/trace-mapping maps it on the app's own map; locations 1-based; no request left
// pending and network_idle on time beside blob: workers; YAML bodies; the actions an agent's
// typing and shortcuts make; the HAR valid. One daemon, one browser, one pass through the apps.
import t from 'tap'
import harValidator from 'har-validator'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { TraceMap, originalPositionFor } from '@jridgewell/trace-mapping'
import { deriveActions } from '../src/actions/index.js'
import { toHar } from '../src/har/index.js'
import { formatEnvelope } from '../src/cli/format.js'
import { consoleLine } from '../src/bundle/console-text.js'
import type { Envelope, EventData, StackTrace } from '../src/events/index.js'
import { driveThroughProxy, startTestDaemon } from './helpers/agent-driver.js'
import { waitFor } from './helpers/http.js'
import { tempDir } from './helpers/store.js'
import { APP_DIRS, TYPED_LINE, runAgentSession, serveRealApps } from './helpers/real-apps.js'

t.setTimeout(170_000)

type Data<T extends Envelope['event']['type']> = EventData<T>
const ofType = <T extends Envelope['event']['type']>(all: Envelope[], type: T) =>
  all.filter(e => e.event.type === type) as (Envelope & { event: { type: T; data: Data<T> } })[]

async function traceMapOf(file: string): Promise<TraceMap> {
  return new TraceMap(await readFile(file, 'utf8'))
}

/** Every frame of a stack (parents too) with its entry's description. */
function framesOf(stack: StackTrace | undefined): { entry: string; f: StackTrace['callFrames'][number] }[] {
  const out: { entry: string; f: StackTrace['callFrames'][number] }[] = []
  for (let s = stack, d = 0; s && d < 32; s = s.parent, d++)
    for (const f of s.callFrames) out.push({ entry: d === 0 ? '' : (s.description ?? ''), f })
  return out
}

t.test('swagger-ui, monaco and jsoneditor driven by an agent: the record is right', async t => {
  const apps = await serveRealApps(t)
  const dir = await tempDir(t)
  const { d, stored } = await startTestDaemon(t, [
    ...['--listen', '127.0.0.1:0', '--data-dir', dir, '--proxy-listen', '127.0.0.1:0'],
  ])
  const { pw, page, startStep, endStep } = await driveThroughProxy(d)
  // Ground truth: what the page itself reported, per page URL.
  const pageErrors: { url: string; text: string }[] = []
  page.on('console', m => {
    // "Failed to load resource" is the browser's own note of a 4xx/5xx response (Log domain), which
    // the record has as the network_response itself; everything else is the page's.
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource'))
      pageErrors.push({ url: page.url(), text: m.text() })
  })
  page.on('pageerror', e => pageErrors.push({ url: page.url(), text: e.message }))
  const storedNow = async (pred: (e: Envelope) => boolean, what: string) =>
    waitFor(async () => (await stored()).find(pred), 20_000, what)
  const line = TYPED_LINE
  await runAgentSession(apps, {
    page,
    startStep,
    endStep,
    stored: (what, pred) => storedNow(pred, what),
  })
  const monacoNav = (await stored()).find(
    e => e.event.type === 'page_navigation' && e.event.data.url === `${apps.url}/monaco/`,
  )!
  await pw.close()
  await storedNow(e => e.event.type === 'cdp_disconnect', 'the disconnect')

  // As every reader gets them: mapped with the maps learned meanwhile.
  await d.sourceMaps.settled()
  const records = (await d.log.read({ order: 'asc', cursor: 1, limit: 100_000 })).records
  const all = (await d.sourceMaps.mapRecords(records)).map(r => JSON.parse(r.json) as Envelope)
  void stored
  t.equal(d.pipeline.stats.invalid, 0, 'no event was dropped as invalid')

  t.test('every console error the page raised is stored once', async t => {
    const errors = ofType(all, 'console_error').filter(e => e.event.data.target_type === 'page')
    const byUrl = (list: { url: string }[]) => {
      const m: Record<string, number> = {}
      for (const x of list) m[x.url] = (m[x.url] ?? 0) + 1
      return m
    }
    t.same(
      byUrl(errors.map(e => ({ url: e.event.data.url ?? '' }))),
      byUrl(pageErrors),
      `per page: ${JSON.stringify(pageErrors.map(p => p.text.slice(0, 80)))}`,
    )
  })

  t.test("swagger-ui's console.error(e): the error's own stack first, mapped exactly", async t => {
    const e = ofType(all, 'console_error').find(e => e.event.data.url === `${apps.url}/swagger/?spec=broken.yaml`)!
    t.ok(e, 'stored')
    const stack = e.event.data.stack_trace!
    t.match(stack.description, /^YAMLException/, 'the top entry is the logged error')
    const entries: string[] = []
    for (let s = stack.parent; s; s = s.parent) entries.push(s.description ?? '')
    t.same(entries, ['console.error'], 'the console call site is the next entry')
    const bundleUrl = `${apps.url}/swagger/dist/swagger-ui-bundle.js`
    const map = await traceMapOf(join(APP_DIRS.swagger, 'swagger-ui-bundle.js.map'))
    const frames = framesOf(stack).filter(x => x.f.url === bundleUrl)
    t.ok(frames.length >= 3, `${frames.length} frames in the bundle`)
    for (const { entry, f } of frames) {
      const want = originalPositionFor(map, { line: f.lineNumber + 1, column: f.columnNumber })
      t.same(
        f.original && { source: f.original.source, line: f.original.line, column: f.original.column },
        { source: want.source, line: want.line, column: want.column! + 1 },
        `${entry || 'own'} ${f.functionName}@${f.lineNumber}:${f.columnNumber}`,
      )
    }
    // Where it failed, not swagger-ui's generic parser catch that logged it.
    const top = stack.callFrames[0]!.original!
    const logged = stack.parent!.callFrames[0]!.original!
    t.not(`${top.source}:${top.line}`, `${logged.source}:${logged.line}`, `failed at ${top.source}:${top.line}`)
    t.match(logged.source, /plugins\/spec\/actions\.js$/, 'logged by the spec plugin')
    const where = `${top.source}:${top.line}:${top.column}`
    t.match(formatEnvelope(e, false), where, 'tail says where it failed')
    t.match(consoleLine(e)!, where, 'console.txt says where it failed')
  })

  t.test("jsoneditor's uncaught error: locations 1-based in every reader", async t => {
    const e = ofType(all, 'console_error').find(e => e.event.data.text.includes('Parse error'))!
    const raw = e.event.data.stack_trace!.callFrames[0]!
    t.equal(e.event.data.source_url, `${apps.url}/jsoneditor/dist/jsoneditor.min.js`)
    t.equal(e.event.data.line, raw.lineNumber, 'the stored line is CDP 0-based, as the frames')
    const human = `jsoneditor.min.js:${raw.lineNumber + 1}:${raw.columnNumber + 1}`
    const unmapped = { ...e, event: { ...e.event, data: { ...e.event.data, stack_trace: { callFrames: [] } } } }
    t.match(formatEnvelope(unmapped as Envelope, false), human, 'tail')
    t.match(consoleLine(unmapped as Envelope)!, human, 'console.txt')
  })

  t.test('no request is left pending; network_idle on time beside blob: workers; the HAR validates', async t => {
    const ended = new Set<string>()
    for (const e of all) {
      const ty = e.event.type
      if (ty === 'network_response' || ty === 'network_loading_failed' || ty === 'network_response_incomplete')
        ended.add((e.event.data as { request_id: string }).request_id)
    }
    const pending = ofType(all, 'network_request').filter(e => !ended.has(e.event.data.request_id))
    t.same(
      pending.map(e => e.event.data.url?.slice(0, 120)),
      [],
      'every request ended (finished, failed or declared incomplete)',
    )
    const idle = ofType(all, 'network_idle').find(e => e.event.data.url === `${apps.url}/monaco/`)!
    const lateMs = (idle.event.ts - monacoNav.event.ts) / 1000
    // Measured 1-3 s at load 1-3; the request TTL it waited for before was 300 s.
    t.ok(lateMs < 20_000, `network_idle ${Math.round(lateMs)} ms after the monaco navigation`)
    const har = toHar(all)
    await t.resolves(harValidator.har(har), 'har-validator accepts the HAR')
    const workerScripts = har.log.entries.filter(x => /workerMain|\.worker/.test(x.request.url))
    const urls = workerScripts.map(x => x.request.url)
    t.same(urls, [...new Set(urls)], `each worker script once: ${urls.join(', ')}`)
  })

  t.test('bodies: the YAML spec captured; a JSON "code" field is not a secret', async t => {
    const spec = ofType(all, 'network_response').find(e => e.event.data.url?.endsWith('/specs/petstore.yaml'))!
    t.match(spec.event.data.body, /^openapi: 3\.0\.0/, 'application/yaml body captured')
    const save = ofType(all, 'network_response').find(e => e.event.data.url?.endsWith('/api/save'))!
    t.equal(save.event.data.body, '{"code":404,"message":"no such document"}')
  })

  t.test('the actions an agent reads', async t => {
    const actions = deriveActions(all).filter(a => a.kind !== 'setup')
    const titles = actions.map(a => a.title)
    t.ok(titles.includes('go to /swagger/?spec=broken.yaml'), `navigations name their query: ${titles.join(' | ')}`)
    const navs = actions.filter(a => a.kind === 'navigate')
    t.same(
      navs.map(a => a.outcome),
      navs.map(() => 'ok'),
      `every navigation succeeded: ${navs.map(a => `${a.title} ${a.outcome}`).join(' | ')}`,
    )
    const goBroken = actions.find(a => a.title === 'go to /swagger/?spec=broken.yaml')
    t.equal(goBroken?.effects.console_errors, 1, "the page's own error is the navigation's effect")
    const typed = actions.filter(a => a.kind === 'type')
    t.same(
      typed.map(a => a.title.replace(/ into .*/, '')),
      [`type ${line.length} characters`, 'type 18 characters', 'type 40 characters'],
      `one typing run is one action: ${typed.map(a => a.title.slice(0, 80)).join(' | ')}`,
    )
    t.equal(typed[1]?.title, 'type 18 characters into #email', 'page.fill() names its element')
    t.match(typed[0]?.title, /^type \d+ characters into #container/, 'typing into monaco names the editor')
    t.same(
      actions.filter(a => a.kind === 'press').map(a => a.title),
      ['press Control+A', 'press Shift+Alt+F', 'press Control+Space', 'press Control+A'],
      'shortcuts are named with their key',
    )
  })

  t.test('workers are not navigations', async t => {
    const navs = ofType(all, 'page_navigation')
    t.same(
      navs.filter(e => e.event.data.target_type !== 'page').map(e => e.event.data.url),
      [],
      'no navigation of a worker target',
    )
  })
})
