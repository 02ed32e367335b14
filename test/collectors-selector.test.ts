// The page-side pure functions (selector builder, privacy rules, click text) evaluated inside a
// real Chromium page over a bare CDP connection: no monitor involved.
import t from 'tap'
import CDP from 'chrome-remote-interface'
import { cssSelectorFor } from '../collectors/selector.js'
import {
  isSensitiveField,
  isOpaqueKeyTarget,
  clickText,
  buildInteractionScript,
} from '../collectors/interaction-script.js'
import { startBrowser } from './helpers/browser.js'
import { startServer } from './helpers/http.js'

const PAGE = `<!doctype html><html><head><title>sel</title></head><body>
<div><div><span>a</span><span>b</span><span>c</span></div><div><p><b>deep</b><b>deeper</b></p></div></div>
<div><div><div><em>x</em></div><div><em>y</em></div></div></div>
<section id="unique"><ul><li>1</li><li>2</li><li><a>three</a></li></ul></section>
<p id="dup">first dup</p><p id="dup">second dup</p>
<span id="1a">digit id</span><span id="a:b.c">punct id</span><span id="with space">space id</span><span id='q"uote'>quote id</span>
<form><input name="email"><input name="email"><input name="zip"><button data-testid="save">Save</button>
<button data-testid='we"ird]'>Weird</button><select name="s"><option>one</option><option selected>two</option></select></form>
<svg width="100" height="100"><defs><linearGradient><stop/><stop/></linearGradient></defs><g><circle r="1"/><circle r="2"/></g><g><rect width="1" height="1"/><foreignObject><div>fo</div></foreignObject></g></svg>
<div><input type="password"><input autocomplete="cc-number"><input autocomplete="section-blue shipping one-time-code">
<input autocomplete="current-password"><input autocomplete="new-password"><input autocomplete="username">
<input name="cardNumber"><input id="card_no"><input name="user_password"><input name="ssn"><input id="cvv2">
<input name="clientSecret"><input name="pin"><input name="spinner"><input name="compass"><input name="passenger">
<input name="search"><textarea name="notes">typed</textarea></div>
<div id="texts"><button>  Hello \n\n   world  </button><div contenteditable="true">private draft</div>
<input type="submit" value="Send it"><a>${'long '.repeat(40)}</a><p>${'x'.repeat(99)}😀tail</p></div>
</body></html>`

/** Runs fn(...args) in the page's main world and returns its JSON value. */
async function inPage<T>(client: CDP.Client, source: string, args: unknown[] = []): Promise<T> {
  const expression = `(() => { const __name = (f) => f; return (${source})(...${JSON.stringify(args)}) })()`
  const r = await client.Runtime.evaluate({ expression, returnByValue: true })
  if (r.exceptionDetails)
    throw new Error(`page threw: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`)
  return r.result.value as T
}

t.test('page-side helpers in real Chromium', async t => {
  const browser = await startBrowser(t)
  const server = await startServer(t, { '/': PAGE })
  const page = (await CDP.List({ port: browser.port })).find(x => x.type === 'page')!
  const client = await CDP({ port: browser.port, target: page.id })
  t.teardown(() => client.close())
  await client.Page.enable()
  const loaded = client.Page.loadEventFired()
  await client.Page.navigate({ url: server.url })
  await loaded
  const selectorSrc = cssSelectorFor.toString()

  t.test('every element round-trips through document.querySelector', async t => {
    const result = await inPage<{ total: number; failures: string[] }>(
      client,
      `(cssSelectorFor) => {
      const all = [...document.querySelectorAll('*')]
      const failures = []
      for (const el of all) {
        const sel = cssSelectorFor(el)
        let found = null
        try { found = document.querySelector(sel) } catch (e) { failures.push(sel + ' threw ' + e.message); continue }
        if (found !== el) failures.push(el.outerHTML.slice(0, 60) + ' -> ' + sel)
      }
      return { total: all.length, failures }
    }`.replace('(cssSelectorFor) =>', `(cssSelectorFor = (${selectorSrc})) =>`),
    )
    t.ok(result.total > 60, `checked ${result.total} elements`)
    t.same(result.failures, [])
  })

  t.test('exact selectors', async t => {
    const cases: Record<string, string> = {
      // script that finds the element -> the selector we expect
      "document.getElementById('unique')": '#unique',
      "document.querySelector('p').lastElementChild":
        'html > body > div:nth-of-type(1) > div:nth-of-type(2) > p > b:nth-of-type(2)',
      "document.querySelectorAll('span')[2]":
        'html > body > div:nth-of-type(1) > div:nth-of-type(1) > span:nth-of-type(3)',
      "document.querySelectorAll('em')[1]": 'html > body > div:nth-of-type(2) > div > div:nth-of-type(2) > em',
      "document.querySelectorAll('#unique li')[2].firstElementChild": '#unique > ul > li:nth-of-type(3) > a',
      "document.querySelectorAll('p[id=dup]')[1]": 'html > body > p:nth-of-type(2)',
      "document.querySelectorAll('span')[3]": '#\\31 a',
      "document.querySelectorAll('span')[4]": '#a\\:b\\.c',
      "document.querySelectorAll('span')[5]": '#with\\ space',
      "document.querySelectorAll('span')[6]": '#q\\"uote',
      "document.querySelectorAll('input[name=email]')[1]": 'html > body > form > input:nth-of-type(2)',
      "document.querySelector('input[name=zip]')": 'input[name="zip"]',
      "document.querySelector('button')": 'button[data-testid="save"]',
      "document.querySelectorAll('button')[1]": 'button[data-testid="we\\"ird\\]"]',
      "document.querySelectorAll('circle')[1]": 'html > body > svg > g:nth-of-type(1) > circle:nth-of-type(2)',
      "document.querySelectorAll('stop')[0]": 'html > body > svg > defs > linearGradient > stop:nth-of-type(1)',
      "document.querySelector('foreignObject div')": 'html > body > svg > g:nth-of-type(2) > foreignObject > div',
      'document.documentElement': 'html',
      'document.body': 'html > body',
    }
    const got = await inPage<Record<string, string>>(
      client,
      `(cases) => {
      const cssSelectorFor = (${selectorSrc})
      const out = {}
      for (const expr of cases) { const el = (0, eval)(expr); out[expr] = el ? cssSelectorFor(el) : 'no element' }
      return out
    }`,
      [Object.keys(cases)],
    )
    t.same(got, cases)
  })

  t.test('a duplicate id falls back to the path, and a later unique id anchors it', async t => {
    const got = await inPage<string[]>(
      client,
      `() => {
      const cssSelectorFor = (${selectorSrc})
      const host = document.createElement('div'); host.id = 'late'
      const inner = document.createElement('i'); host.append(document.createElement('i'), inner)
      document.body.append(host)
      const a = cssSelectorFor(inner)
      const twin = document.createElement('div'); twin.id = 'late'; document.body.append(twin)
      const b = cssSelectorFor(inner)
      const ok = document.querySelector(b) === inner
      host.remove(); twin.remove()
      return [a, b, String(ok)]
    }`,
    )
    t.same(got, ['#late > i:nth-of-type(2)', 'html > body > div:nth-of-type(5) > i:nth-of-type(2)', 'true'])
  })

  t.test('sensitive fields', async t => {
    const got = await inPage<Array<[string, boolean]>>(
      client,
      `() => {
      const isSensitiveField = (${isSensitiveField.toString()})
      return [...document.querySelectorAll('input, textarea')].filter((el) => !el.closest('form'))
        .map((el) => [el.outerHTML, isSensitiveField(el)])
    }`,
    )
    t.same(got, [
      ['<input type="password">', true],
      ['<input autocomplete="cc-number">', true],
      ['<input autocomplete="section-blue shipping one-time-code">', true],
      ['<input autocomplete="current-password">', true],
      ['<input autocomplete="new-password">', true],
      ['<input autocomplete="username">', false],
      ['<input name="cardNumber">', true],
      ['<input id="card_no">', true],
      ['<input name="user_password">', true],
      ['<input name="ssn">', true],
      ['<input id="cvv2">', true],
      ['<input name="clientSecret">', true],
      ['<input name="pin">', true],
      ['<input name="spinner">', false],
      ['<input name="compass">', false],
      ['<input name="passenger">', false],
      ['<input name="search">', false],
      ['<textarea name="notes">typed</textarea>', false],
      ['<input type="submit" value="Send it">', false],
    ])
  })

  t.test('key targets that may hide a closed shadow root are opaque', async t => {
    const got = await inPage<boolean[]>(
      client,
      `() => {
      const isOpaqueKeyTarget = (${isOpaqueKeyTarget.toString()})
      const el = (html) => { const d = document.createElement('div'); d.innerHTML = html; return d.firstElementChild }
      const self = (html) => { const e = el(html); return isOpaqueKeyTarget(e, e) }
      return [
        isOpaqueKeyTarget(document.body, document.body), self('<input>'), self('<button></button>'), self('<a href="#">x</a>'),
        self('<div tabindex="0"></div>'), self('<p contenteditable="true"></p>'), isOpaqueKeyTarget(el('<div></div>'), el('<input>')),
        self('<div></div>'), self('<a>no href</a>'), self('<my-field tabindex="0"></my-field>'),
      ]
    }`,
    )
    t.same(got, [false, false, false, false, false, false, false, true, true, true])
  })

  t.test('click text: trimmed, collapsed, capped, blank for typed-in and sensitive fields', async t => {
    const got = await inPage<string[]>(
      client,
      `() => {
      const isSensitiveField = (${isSensitiveField.toString()})
      const clickText = (${clickText.toString()})
      const q = (s) => document.querySelector(s)
      return [
        q('#texts button'), q('#texts [contenteditable]'), q('#texts input[type=submit]'), q('#texts a'),
        q('#texts p'), q('textarea'), q('input[type=password]'), q('select'), q('input[name=search]'), q('svg g:nth-of-type(2)'),
      ].map((el) => clickText(el, 100, isSensitiveField))
    }`,
    )
    t.same(got, [
      'Hello world',
      '',
      'Send it',
      'long '.repeat(40).trim().slice(0, 100).trimEnd(),
      'x'.repeat(99),
      '',
      '',
      'two',
      '',
      'fo',
    ])
    t.equal(got[4]!.length, 99, 'a surrogate pair straddling the cap is dropped whole')
  })

  t.test('the built script is valid and does nothing without its binding', async t => {
    const r = await client.Runtime.evaluate({
      expression:
        buildInteractionScript('__absent', { scrollQuietMs: 300, textMax: 100 }) +
        '; window.__browserTelemetryInteraction === undefined',
      returnByValue: true,
    })
    t.equal(r.exceptionDetails, undefined)
    t.equal(r.result.value, true)
  })
})
