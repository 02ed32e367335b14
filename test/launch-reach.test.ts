// What a CDP client can reach through the launched Chromium: not the daemon's environment (tokens,
// OTLP and NATS settings), not its data dir when the browser shares the daemon's user, and none of
// the capabilities the unit grants the daemon. Real headless Chromium, real daemon.
import t, { type Test } from 'tap'
import { execFile } from 'node:child_process'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import puppeteer from 'puppeteer-core'
import { WebSocket } from 'ws'
import { parseServeConfig } from '../src/config/config.js'
import { startDaemon } from '../src/main.js'
import { silentLogger } from '../src/log.js'
import { startBrowser } from './helpers/browser.js'
import { tempDir } from './helpers/store.js'

const isRoot = process.getuid?.() === 0
const SECRETS = {
  BROWSER_TELEMETRY_TOKEN: 'bt-secret-token-7f3a',
  OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer otlp-secret-91c2',
  NATS_TOKEN: 'nats-secret-55d0',
  BT_TEST_UNRELATED_SECRET: 'unrelated-secret-0b1e',
}
const SAME_USER_WARNING =
  "Chromium runs as the daemon's own user: the CDP proxy refuses file: URLs and data-dir paths, but a compromised browser can read the token and the log; give Chromium its own user (docs/operations.md)"

function withSecrets(t: Test): void {
  for (const [k, v] of Object.entries(SECRETS)) process.env[k] = v
  t.teardown(() => {
    for (const k of Object.keys(SECRETS)) delete process.env[k]
  })
}

/** Names the Debian wrapper script (/usr/bin/chromium) adds before it execs the browser, and those
 *  tap's process tracking adds to every child the test process spawns. Every other child (zygote,
 *  renderers) starts from the browser process's environment. */
const WRAPPER_VAR = /^(CHROME_[A-Z_]+|CHROMIUM_FLAGS|GOOGLE_[A-Z_]+|PWD|_TAPJS_[A-Z_]+|NODE_OPTIONS)$/

t.test(
  "Chromium's environment holds none of the daemon's: through CDP and in the browser process (every child starts from its)",
  async t => {
    t.setTimeout(45_000)
    withSecrets(t)
    const b = await startBrowser(t) // the daemon's own user: no user switch
    const pp = await puppeteer.connect({ browserWSEndpoint: b.wsUrl, defaultViewport: null })
    t.teardown(() => pp.disconnect())
    const page = await pp.newPage()
    // Chromium reads /proc files by their stat size (0) and shows nothing: the page is checked anyway,
    // the processes below are what a renderer exploit or a crash reporter reads.
    t.equal((await page.goto('file:///proc/self/environ'))?.status(), 200)
    const text = await page.evaluate(() => document.body.innerText)
    t.same(
      Object.values(SECRETS).filter(v => text.includes(v)),
      [],
      'no secret value in file:///proc/self/environ',
    )
    const names = (pid: number) =>
      readFile(`/proc/${pid}/environ`, 'utf8').then(e =>
        e
          .split('\0')
          .filter(Boolean)
          .map(kv => kv.slice(0, kv.indexOf('='))),
      )
    const kept = Object.keys(process.env).filter(k => /^(PATH|LANG|LANGUAGE|LC_[A-Z]+|TZ)$/.test(k))
    const expected = ['HOME', 'XDG_CACHE_HOME', 'XDG_CONFIG_HOME', ...kept].sort()
    t.same(
      (await names(b.pid)).filter(n => !WRAPPER_VAR.test(n)).sort(),
      expected,
      'the browser process: its HOME and locale/path, nothing else of ours',
    )
    const environ = (await readFile(`/proc/${b.pid}/environ`, 'utf8')).split('\0')
    t.ok(environ.includes(`HOME=${join(b.userDataDir, '..', 'home')}`), 'its HOME is its own, in the per-launch dir')
  },
)

t.test(
  "a browser of the daemon's own user: the proxy refuses file: URLs and data-dir paths; /healthz says so",
  async t => {
    t.setTimeout(60_000)
    withSecrets(t)
    const dir = await tempDir(t)
    // Root Chromium for a root runner, the runner's own user otherwise: the same user either way.
    const config = parseServeConfig(
      [
        '--listen',
        '127.0.0.1:0',
        '--data-dir',
        dir,
        '--proxy-listen',
        '127.0.0.1:0',
        '--proxy-auth',
        '--categories',
        'page',
        '--chromium-user',
        'root',
      ],
      {},
    )
    const d = await startDaemon(config, { logger: silentLogger, announce: () => {}, showNewToken: false })
    t.teardown(() => d.close())
    const token = (await readFile(join(dir, 'token'), 'utf8')).trim()
    const proxyPort = d.proxy!.address().port
    const proxy = `ws://127.0.0.1:${proxyPort}/devtools/browser?token=${token}`
    const pp = await puppeteer.connect({ browserWSEndpoint: proxy, defaultViewport: null })
    t.teardown(() => pp.disconnect())
    const page = await pp.newPage()
    const refused = 'browser-telemetry: file: URLs are refused'

    for (const url of [
      `file://${dir}/token`,
      'file:///tmp/',
      `FILE://${dir}/token`,
      `view-source:file://${dir}/token`,
    ]) {
      const err = await page.goto(url).then(
        () => 'loaded',
        (e: Error) => e.message,
      )
      t.match(err, refused, `${url} refused`)
      t.equal(page.url(), 'about:blank', 'the page stayed where it was')
    }
    t.notMatch(await page.evaluate(() => document.body?.innerText ?? ''), token)
    const cdp = await page.createCDPSession()
    await t.rejects(cdp.send('Target.createTarget', { url: `file://${dir}/token` }), { message: new RegExp(refused) })

    // JSON escapes spell the same command; the guard reads what Chromium would.
    const raw = new WebSocket(proxy)
    t.teardown(() => raw.close())
    await new Promise(r => raw.once('open', r))
    const answer = new Promise<string>(r => raw.once('message', m => r(String(m))))
    raw.send(`{"id":7,"method":"Target.cre\\u0061teTarget","params":{"url":"fil\\u0065://${dir}/token"}}`)
    t.same(JSON.parse(await answer), {
      id: 7,
      error: {
        code: -32000,
        message: `${refused}: the browser runs as the daemon’s user, which can read its token and log`,
      },
    })

    // Files of the data dir are not handed to a page (a file input would read them), upload roots are.
    await page.setContent('<input type="file">')
    const input = (await page.$('input'))!
    await t.rejects(input.uploadFile(join(dir, 'token')), {
      message: new RegExp(`inside the daemon's data dir`),
    })
    t.equal(await page.evaluate(() => document.querySelector('input')!.files!.length), 0)
    await mkdir(join(dir, 'uploads'), { recursive: true })
    await writeFile(join(dir, 'uploads', 'form.txt'), 'UPLOADED-FILE')
    await input.uploadFile(join(dir, 'uploads', 'form.txt'))
    t.equal(await page.evaluate(() => document.querySelector('input')!.files![0]!.text()), 'UPLOADED-FILE')

    const jsonNew = await fetch(
      `http://127.0.0.1:${proxyPort}/json/new?${encodeURIComponent(`file://${dir}/token`)}&token=${token}`,
      { method: 'PUT' },
    )
    t.equal(jsonNew.status, 403)
    t.same(await jsonNew.json(), {
      code: 'file_url_refused',
      message: 'file: URLs are refused: the browser runs as the daemon’s user, which can read its token and log',
    })
    // An ordinary page still opens.
    const ok = await fetch(`http://127.0.0.1:${proxyPort}/json/new?about:blank&token=${token}`, { method: 'PUT' })
    t.equal(ok.status, 200)

    const health = (await (await fetch(`${d.url}/healthz`)).json()) as { warnings: string[] }
    t.same(health.warnings, [
      ...(d.monitor!.launched!.sandbox.enabled
        ? []
        : [
            "Chromium runs with --no-sandbox (it would run as root, or --no-sandbox was asked for): a renderer exploit gets the browser's user",
          ]),
      SAME_USER_WARNING,
    ])
  },
)

t.test(
  'Chromium of a daemon holding ambient CAP_SYSLOG (the unit grants it) starts with no capabilities',
  { skip: isRoot ? false : 'needs root to start the daemon side as nobody with an ambient capability' },
  async t => {
    t.setTimeout(45_000)
    const root = fileURLToPath(new URL('..', import.meta.url))
    const script = `
      import { launchChromium } from './src/monitor/launch.ts'
      import { readFileSync } from 'node:fs'
      const caps = pid => Object.fromEntries(readFileSync('/proc/' + pid + '/status', 'utf8').split('\\n')
        .filter(l => /^Cap(Inh|Prm|Eff|Amb):/.test(l)).map(l => l.split(/:\\s*/)))
      const b = await launchChromium({})
      console.log(JSON.stringify({ daemon: caps(process.pid), browser: caps(b.pid) }))
      await b.close()
    `
    const out = await new Promise<string>((resolve, reject) =>
      execFile(
        '/usr/bin/setpriv',
        [
          '--reuid=65534',
          '--regid=65534',
          '--clear-groups',
          '--inh-caps=+syslog',
          '--ambient-caps=+syslog',
          process.execPath,
          '--import=tsx',
          '--input-type=module',
          '-e',
          script,
        ],
        { cwd: root, env: { PATH: process.env.PATH, HOME: '/tmp' }, timeout: 40_000 },
        (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout)),
      ),
    )
    const caps = JSON.parse(out.trim().split('\n').at(-1)!) as Record<string, Record<string, string>>
    const SYSLOG = '0000000400000000'
    t.same(caps.daemon, { CapInh: SYSLOG, CapPrm: SYSLOG, CapEff: SYSLOG, CapAmb: SYSLOG }, 'the daemon side has it')
    const none = '0000000000000000'
    t.same(caps.browser, { CapInh: none, CapPrm: none, CapEff: none, CapAmb: none }, 'the browser has none')
  },
)

t.test('isFileUrl: what Chromium would open as a local file', async t => {
  const { isFileUrl } = await import('../src/proxy/file-guard.js')
  const yes = [
    'file:///etc/passwd',
    ' FILE:///x',
    '\tfi\nle:///x',
    'view-source:file:///x',
    'view-source: view-source:file:/x',
    '/etc/passwd',
    'file:x',
  ]
  const no = ['https://example.com/file:///x', 'about:blank', 'data:text/html,file:', 'view-source:https://a.test/']
  t.same(
    yes.filter(u => !isFileUrl(u)),
    [],
    'file URLs',
  )
  t.same(
    no.filter(u => isFileUrl(u)),
    [],
    'other URLs',
  )
})
