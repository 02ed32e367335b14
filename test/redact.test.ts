// Redactor: exact masking of headers, URLs (userinfo, query, fragment), form/JSON bodies, log objects.
import t from 'tap'
import { Redactor, maskValue } from '../src/events/redact.js'
import { Pipeline } from '../src/pipeline/pipeline.js'
import { accepted as ok, openStore } from './helpers/store.js'

const r = new Redactor({ headers: ['X-Custom-Secret'], params: ['otp'] })

t.test('masked values keep their length class', async t => {
  t.equal(maskValue(''), '[redacted:8]')
  t.equal(maskValue('12345678'), '[redacted:8]')
  t.equal(maskValue('123456789'), '[redacted:16]')
  t.equal(maskValue('x'.repeat(100)), '[redacted:128]')
})

t.test('headers: built-in and configured names, any case; URL-valued headers; same object when clean', async t => {
  const h = {
    Authorization: 'Bearer abc',
    Cookie: 'sid=1',
    'set-cookie': 'a=b',
    'Proxy-Authorization': 'Basic x',
    'X-API-Key': 'k1',
    'x-auth-token': 't1',
    'X-CSRF-Token': 'c1',
    'x-custom-secret': 's1',
    Referer: 'https://a.example/p?token=zz&x=1',
    accept: '*/*',
  }
  t.same(r.headers(h), {
    Authorization: '[redacted:16]',
    Cookie: '[redacted:8]',
    'set-cookie': '[redacted:8]',
    'Proxy-Authorization': '[redacted:8]',
    'X-API-Key': '[redacted:8]',
    'x-auth-token': '[redacted:8]',
    'X-CSRF-Token': '[redacted:8]',
    'x-custom-secret': '[redacted:8]',
    Referer: 'https://a.example/p?token=[redacted:8]&x=1',
    accept: '*/*',
  })
  const clean = { accept: '*/*' }
  t.equal(r.headers(clean), clean)
})

t.test('URLs: userinfo, secret-looking query and fragment params; other text byte for byte', async t => {
  const cases: [string, string][] = [
    ['https://user:pa55@host.example/x', 'https://[redacted:16]@host.example/x'],
    ['https://host.example/cb?code=abc&state=xyz', 'https://host.example/cb?code=[redacted:8]&state=xyz'],
    [
      'https://h/?access_token=A&refresh_token=B&sig=C&signature=D&X-Amz-Signature=E&apiKey=F&api_key=G&session=H&sessionid=I&password=J&secret=K&key=L&otp=M&keyword=ok&zipcode=ok',
      'https://h/?access_token=[redacted:8]&refresh_token=[redacted:8]&sig=[redacted:8]&signature=[redacted:8]&X-Amz-Signature=[redacted:8]&apiKey=[redacted:8]&api_key=[redacted:8]&session=[redacted:8]&sessionid=[redacted:8]&password=[redacted:8]&secret=[redacted:8]&key=[redacted:8]&otp=[redacted:8]&keyword=ok&zipcode=ok',
    ],
    [
      'https://h/cb#access_token=tok123&token_type=bearer&expires_in=3600',
      'https://h/cb#access_token=[redacted:8]&token_type=[redacted:8]&expires_in=3600',
    ],
    ['https://h/p?q=1#section-2', 'https://h/p?q=1#section-2'],
    ['https://h/p?%74oken=enc', 'https://h/p?%74oken=[redacted:8]'],
    ['/relative?password=p', '/relative?password=[redacted:8]'],
    ['https://h/plain', 'https://h/plain'],
    // Masked already (a stored URL masked again by a reader): unchanged, not re-masked to [redacted:16].
    ['https://h/p?token=[redacted:8]&q=1', 'https://h/p?token=[redacted:8]&q=1'],
  ]
  for (const [input, want] of cases) t.equal(r.url(input), want, input)
})

t.test('bodies: form-encoded and JSON fields (nested, numbers), cut JSON, other text untouched', async t => {
  t.equal(
    r.body('user=bob&password=hunter2&remember=1', 'application/x-www-form-urlencoded'),
    'user=bob&password=[redacted:8]&remember=1',
  )
  t.equal(
    r.body(
      '{"user":"bob","password":"hunter2","nested":{"client_secret":"cs","pin":1},"list":[{"token":123456789}]}',
      'application/json',
    ),
    '{"user":"bob","password":"[redacted:8]","nested":{"client_secret":"[redacted:8]","pin":1},"list":[{"token":"[redacted:16]"}]}',
  )
  t.equal(
    r.body('{"user":"bob", "password": "hunter2", "note": "cut her', 'application/json'),
    '{"user":"bob", "password": "[redacted:8]", "note": "cut her',
    'JSON cut by a body cap is masked textually',
  )
  t.equal(r.body('{"a":1}', 'application/json'), '{"a":1}', 'no secret: unchanged, byte for byte')
  t.equal(r.body('hello password=x', 'text/plain'), 'hello password=x', 'free text is not guessed at')
  // The copy-on-write walk: what it masks is found wherever it sits; what it does not touch stays as sent.
  t.equal(
    r.body('{ "a" : [1, {"b": null}], "token": {"not": "a leaf"} }', 'application/json'),
    '{ "a" : [1, {"b": null}], "token": {"not": "a leaf"} }',
    'a secret name holding an object is walked, not masked: nothing to mask, so the text stays byte for byte',
  )
  t.equal(
    r.body('{"token":{"deep":[[{"api_key":"k1"}]]}}', 'application/json'),
    '{"token":{"deep":[[{"api_key":"[redacted:8]"}]]}}',
    'a secret only deep inside arrays is found',
  )
  const deep = '['.repeat(70) + '{"password":"x"}' + ']'.repeat(70)
  t.equal(r.body(deep, 'application/json'), deep, 'past the depth limit (64) nothing is masked, as before')
  t.equal(
    r.body('{"__proto__":{"token":"abc"},"a":1}', 'application/json'),
    '{"__proto__":{"token":"[redacted:8]"},"a":1}',
    'a "__proto__" key stays a field of the copy, masked inside (not the copy\'s prototype, which JSON.stringify would drop)',
  )
})

t.test(
  'YAML bodies: secret keys masked (plain, quoted, in sequences, block scalars), the rest byte for byte',
  async t => {
    const yaml = [
      'openapi: 3.0.0',
      'servers:',
      '  - url: https://api.example',
      '    api_key: abc123',
      'auth:',
      '  password: "hunter2"',
      "  'client_secret': 's3cr3t' # rotated",
      '  private_key: |',
      '    -----BEGIN KEY-----',
      '',
      '    AAAA',
      '  user: bob',
      'token:',
      '  type: bearer',
      '',
    ].join('\n')
    t.equal(
      r.body(yaml, 'application/yaml'),
      [
        'openapi: 3.0.0',
        'servers:',
        '  - url: https://api.example',
        '    api_key: "[redacted:8]"',
        'auth:',
        '  password: "[redacted:8]"',
        '  \'client_secret\': "[redacted:32]"',
        '  private_key: "[redacted:32]"',
        '  user: bob',
        'token:',
        '  type: bearer',
        '',
      ].join('\n'),
    )
    t.equal(r.body('a: 1\r\nsecret: x\r\n', 'text/yaml'), 'a: 1\r\nsecret: "[redacted:8]"\r\n', 'CRLF kept')
    const clean = 'info:\n  title: Petstore # the usual\n  version: 1.0.0\n'
    t.equal(r.body(clean, 'application/x-yaml'), clean, 'no secret: unchanged')
    t.equal(r.body('password: x', 'text/plain'), 'password: x', 'only a YAML body is read as YAML')
  },
)

t.test(
  'code: masked as a URL parameter and a form field (an OAuth or one-time code), not as a JSON or YAML field',
  async t => {
    const d = new Redactor()
    // URL query and fragment: the authorization code of a redirect.
    t.equal(
      d.url('https://app.example/callback?code=SplxlOBeZQQYbYS6WxSbIA&state=xyz'),
      'https://app.example/callback?code=[redacted:32]&state=xyz',
    )
    t.equal(d.url('https://app.example/cb#code=abc&state=s'), 'https://app.example/cb#code=[redacted:8]&state=s')
    t.equal(d.url('https://h/?client_code=1&zipcode=12345'), 'https://h/?client_code=[redacted:8]&zipcode=12345')
    // Form posts: the token request that trades the code.
    t.equal(
      d.body(
        'grant_type=authorization_code&code=SplxlOBeZQQYbYS6WxSbIA&redirect_uri=https%3A%2F%2Fapp',
        'application/x-www-form-urlencoded',
      ),
      'grant_type=authorization_code&code=[redacted:32]&redirect_uri=https%3A%2F%2Fapp',
    )
    t.equal(d.body('code=123456'), 'code=[redacted:8]', 'a form-looking body without a content type')
    // JSON and YAML: a status or an error code, kept byte for byte.
    t.equal(d.body('{"code":404}', 'application/json'), '{"code":404}')
    t.equal(
      d.body('{"error":{"code":"E_NOT_FOUND","message":"no such pet"},"statusCode":404}', 'application/problem+json'),
      '{"error":{"code":"E_NOT_FOUND","message":"no such pet"},"statusCode":404}',
    )
    t.equal(
      d.body('{"code": 401, "token": "abc", "note": "cut', 'application/json'),
      '{"code": 401, "token": "[redacted:8]", "note": "cut',
      'cut JSON: the token only',
    )
    t.equal(d.body('code: 404\nsecret: x\n', 'application/yaml'), 'code: 404\nsecret: "[redacted:8]"\n')
    // A CDP command's JSON keeps its code; a URL inside it is masked as a URL.
    const e = {
      type: 'cdp_command',
      data: { params: '{"code":7,"url":"https://h/cb?code=abc"}' },
    } as unknown as Parameters<Redactor['event']>[0]
    d.event(e)
    t.equal((e.data as { params: string }).params, '{"code":7,"url":"https://h/cb?code=[redacted:8]"}')
    // Through the pipeline, as stored: the redirect's code masked, the API's error code kept.
    const { log, pipeline } = await openStore(t, {}, { redactor: d })
    await ok(
      pipeline.emit({
        type: 'network_response',
        source: { kind: 'cdp' },
        data: {
          request_id: '1',
          url: 'https://app.example/callback?code=abc123&state=s',
          status: 404,
          status_text: 'Not Found',
          headers: { 'content-type': 'application/json' },
          mime_type: 'application/json',
          body: '{"code":404}',
        },
      }),
    ).committed
    const [stored] = (await log.read({ order: 'asc', limit: 10 })).records.map(
      rec => JSON.parse(rec.json) as { event: { data: { url: string; body: string } } },
    )
    t.equal(stored!.event.data.url, 'https://app.example/callback?code=[redacted:8]&state=s')
    t.equal(stored!.event.data.body, '{"code":404}')
    // Named by --redact-params, code is a secret everywhere again.
    t.equal(new Redactor({ params: ['code'] }).body('{"code":404}', 'application/json'), '{"code":"[redacted:8]"}')
    t.same(d.policy().url_form_params, ['code'])
    t.notOk(d.policy().params.includes('code'), 'not among the terms masked everywhere')
    t.same(new Redactor({ params: ['code'] }).policy().url_form_params, [], 'once configured it is masked everywhere')
  },
)

t.test('the pipeline masks every place before storage; the producer object is untouched', async t => {
  const { log, pipeline } = await openStore(t, {}, { redactor: r })
  const data = {
    request_id: '1',
    method: 'POST',
    url: 'https://u:p@h/x?token=T1',
    document_url: 'https://h/?sig=S1',
    redirect_url: 'https://h/#access_token=A1',
    headers: { 'content-type': 'application/json', 'x-api-key': 'K1' },
    post_data: '{"password":"P1"}',
  }
  await ok(pipeline.emit({ type: 'network_request', source: { kind: 'cdp' }, data })).committed
  await ok(
    pipeline.emit({
      type: 'network_response',
      source: { kind: 'cdp' },
      data: {
        request_id: '1',
        status: 200,
        status_text: 'OK',
        headers: { 'set-cookie': 'sid=SC1' },
        mime_type: 'application/json',
        body: '{"access_token":"AT1","refresh_token":"RT1"}',
      },
    }),
  ).committed
  await ok(
    pipeline.emit({
      type: 'console_error',
      source: { kind: 'cdp' },
      data: {
        text: 'x',
        source_url: 'https://h/a.js?key=CK1',
        stack_trace: {
          callFrames: [
            { functionName: 'f', scriptId: '1', url: 'https://h/a.js?key=CK2', lineNumber: 1, columnNumber: 1 },
          ],
        },
      },
    }),
  ).committed
  await ok(
    pipeline.emit({
      type: 'page_lcp',
      source: { kind: 'cdp' },
      data: { time: 1, lcp_details: { render_time: 1, load_time: 1, size: 1, url: 'https://h/i.png?signature=LS1' } },
    }),
  ).committed
  const stored = (await log.read({ order: 'asc', limit: 10, cursor: 1 })).records.map(x => x.json).join('\n')
  for (const secret of ['T1', 'S1', 'A1', 'K1', 'P1', 'SC1', 'AT1', 'RT1', 'CK1', 'CK2', 'LS1', 'u:p'])
    t.notOk(stored.includes(secret), `${secret} not stored`)
  t.match(stored, '"post_data":"{\\"password\\":\\"[redacted:8]\\"}"')
  t.equal(data.url, 'https://u:p@h/x?token=T1', 'producer object untouched')
})

t.test('log objects: headers, URL fields and token-ish keys masked at depth; codes and ids kept', async t => {
  const obj = {
    url: 'https://h/?token=T',
    req: { headers: { Authorization: 'Bearer Z', cookie: 'c' } },
    apiKey: 'AK',
    code: 'ENOSPC',
    sessionId: 'S',
    tokenName: 'ci',
    msg: 'x',
  }
  t.same(r.logObject(obj), {
    url: 'https://h/?token=[redacted:8]',
    req: { headers: { Authorization: '[redacted:8]', cookie: '[redacted:8]' } },
    apiKey: '[redacted:8]',
    code: 'ENOSPC',
    sessionId: 'S',
    tokenName: 'ci',
    msg: 'x',
  })
})

t.test('Pipeline default redactor is the built-in policy', async t => {
  const { log } = await openStore(t)
  const p = new Pipeline({ log })
  const e = ok(
    p.emit({
      type: 'network_request',
      source: { kind: 'cdp' },
      data: { request_id: '1', method: 'GET', url: 'https://h/?password=pw', headers: { 'X-Auth-Token': 'tt' } },
    }),
  )
  t.equal((e.envelope.event.data as { url: string }).url, 'https://h/?password=[redacted:8]')
})

t.test('console text: URLs quoted in text, message and string args masked; the rest as written', async t => {
  const text = 'Error: boom\n    at https://cdn.test/app.js?token=SECRET-1:1:15 (see http://u:pw@h.test/x)'
  const data = {
    level: 'error',
    text,
    args: [text, 'password=hunter2 plain words', 3],
    stack_trace: { callFrames: [{ url: 'https://cdn.test/app.js?token=SECRET-1', lineNumber: 0, columnNumber: 14 }] },
  }
  const event = { type: 'console_error', category: 'console', source: { kind: 'cdp' }, data } as never
  r.event(event)
  const out = (event as { data: typeof data }).data
  const want = 'Error: boom\n    at https://cdn.test/app.js?token=[redacted:8]:1:15 (see http://[redacted:8]@h.test/x)'
  t.equal(out.text, want)
  t.same(out.args, [want, 'password=hunter2 plain words', 3], 'free text without a URL is not read for secrets')
  t.equal(out.stack_trace.callFrames[0]!.url, 'https://cdn.test/app.js?token=[redacted:8]')
  t.equal(data.text, text, 'the producer object is untouched')
  t.equal(r.textUrls('no links here'), 'no links here')
  const clean = 'see https://shop.test/cart?item=3'
  t.equal(r.textUrls(clean), clean)
})
