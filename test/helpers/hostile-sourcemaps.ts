// Hostile source maps for the hostile-page suite: a page whose scripts each throw and each name a
// map the daemon must refuse, within its bounds, while /healthz and the RSS bound hold. Every refusal
// is counted in the case's notes as `sourcemap_failed <script> <reason>`.
import type { IncomingMessage, ServerResponse } from 'node:http'
import { gently, type HostileCase } from './hostile.js'
import { waitFor } from './http.js'

const MiB = 1024 * 1024

/** A script that throws at once and names `mapRef` as its map. */
const script =
  (mapRef: string) =>
  (_req: IncomingMessage, res: ServerResponse): void => {
    res.writeHead(200, { 'content-type': 'text/javascript', 'cache-control': 'no-store' })
    res.end(`(function(){throw new Error('hostile map')})()\n//# sourceMappingURL=${mapRef}\n`)
  }

/** A JSON body streamed in 1 MiB pieces, never held whole: `head`, `count` repeats of `piece`, `tail`. */
const streamed =
  (head: string, piece: string, count: number, tail: string) =>
  (_req: IncomingMessage, res: ServerResponse): void => {
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' })
    res.write(head)
    let i = 0
    const more = () => {
      while (i < count) {
        i++
        if (!res.write(piece)) return void res.once('drain', more)
      }
      res.end(tail)
    }
    res.on('error', () => {}) // the daemon stops reading a map past its cap
    more()
  }

const json = (body: string) => (_req: IncomingMessage, res: ServerResponse) => {
  res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' })
  res.end(body)
}

/** The scripts of a case and the refusal each must get. */
export interface MapCaseSpec {
  name: string
  /** script name -> [what it names, the handler of the map if the site serves one, expected reason] */
  scripts: Record<
    string,
    { ref: (origin: string, port: number) => string; map?: HostileCase['pages'][string]; reason: string }
  >
  daemonArgs?: string[]
}

export const SOURCE_MAP_CASES: MapCaseSpec[] = [
  {
    name: 'source maps: 50 MB, invalid VLQ, 100,000 sources, a redirect loop, file://, a private address',
    scripts: {
      huge: {
        // 50 MiB of valid JSON, mostly sources' text (which costs nothing once parsed): read to the 16
        // MiB cap, then the read is stopped.
        ref: () => '/maps/huge.map',
        map: streamed(
          '{"version":3,"sources":["a.ts"],"mappings":"AAAA","sourcesContent":["',
          'x'.repeat(MiB),
          50,
          '"]}',
        ),
        reason: 'too_large',
      },
      vlq: {
        ref: () => '/maps/vlq.map',
        map: json('{"version":3,"sources":["a.ts"],"names":[],"mappings":"AAAA;AA!A;AAAA"}'),
        reason: 'bad_mappings',
      },
      sources: {
        ref: () => '/maps/sources.map',
        map: json(
          JSON.stringify({
            version: 3,
            sources: Array.from({ length: 100_000 }, (_, i) => `webpack://app/./src/module-${i}/index.ts`),
            mappings: 'AAAA',
          }),
        ),
        reason: 'too_many_sources',
      },
      loop: {
        ref: () => '/maps/loop.map',
        map: (_req, res) => {
          res.writeHead(302, { location: '/maps/loop.map', 'cache-control': 'no-store' })
          res.end()
        },
        reason: 'fetch_failed',
      },
      file: { ref: () => 'file:///etc/passwd', reason: 'refused_url' },
      // The same server under another origin (localhost, not 127.0.0.1): private and not the page's.
      private: { ref: (_origin, port) => `http://localhost:${port}/maps/vlq.map`, reason: 'private_address' },
    },
  },
  {
    // The byte cap raised so the segment bound is what refuses it (20 MB of the smallest segments):
    // the read stops at the bound, about 1.3 MB in.
    name: 'source maps: 10 million mapping segments',
    daemonArgs: ['--sourcemap-max-bytes', '24MiB'],
    scripts: {
      segments: {
        ref: () => '/maps/segments.map',
        map: streamed('{"version":3,"sources":["a.ts"],"names":[],"mappings":"', 'A,'.repeat(MiB / 2), 10, 'A"}'),
        reason: 'too_many_segments',
      },
    },
  },
  {
    // Maps at the 16 MiB cap that cost nothing by their segments: before lines and JSON values were
    // bounds, each decoded to about 700 MB (empty lines) or parsed to over 100 MB (names).
    name: 'source maps: 20 at the cap of empty lines or names',
    scripts: Object.fromEntries(
      Array.from({ length: 20 }, (_, i) => {
        const [kind, head, piece, last] =
          i % 2 === 0
            ? ['lines', '{"version":3,"sources":["a.ts"],"names":[],"mappings":"', ';', '"}']
            : ['names', '{"version":3,"sources":["a.ts"],"mappings":"AAAA","names":[', '"",', '""]}']
        const name = `${kind}${i}`
        // 15 MiB of pieces, then one piece short of another MiB: a few hundred bytes under the cap.
        const unit = piece.repeat(Math.floor(MiB / piece.length))
        const tail = piece.repeat(Math.floor((MiB - 1024) / piece.length)) + last
        return [
          name,
          { ref: () => `/maps/${name}.map`, map: streamed(head, unit, 15, tail), reason: 'too_many_segments' },
        ]
      }),
    ),
  },
]

/** A hostile case from a spec: the page loads every script; the case ends once each was refused. */
export function sourceMapCase(spec: MapCaseSpec): HostileCase {
  const pages: HostileCase['pages'] = {
    '/': '<!doctype html><title>hostile maps</title><body>set in run()</body>',
  }
  for (const [name, s] of Object.entries(spec.scripts)) if (s.map) pages[`/maps/${name}.map`] = s.map
  const names = Object.keys(spec.scripts)
  return {
    name: spec.name,
    pages,
    daemonArgs: spec.daemonArgs,
    async run(ctx) {
      // Map references that name the site's own origin (or another) are only known once it listens.
      for (const [name, s] of Object.entries(spec.scripts))
        ctx.site.route(`/js/${name}.js`, script(s.ref(ctx.site.origin, ctx.site.port)))
      ctx.site.route(
        '/',
        `<!doctype html><title>hostile maps</title><body>${names.map(n => `<script src="/js/${n}.js"></script>`).join('')}</body>`,
      )
      await ctx.openWatchedTab(ctx.site.url)
      const refused = async () => {
        const seen = (await ctx.events('category=console&order=desc&limit=100')).filter(
          e => e.event.type === 'sourcemap_failed',
        )
        return seen.length >= names.length ? seen : undefined
      }
      for (const e of await waitFor(gently(refused), 90_000, `${names.length} maps refused`)) {
        const scriptName = /\/js\/([a-z0-9]+)\.js$/.exec(String(e.event.data.script_url))?.[1] ?? '?'
        const key = `sourcemap_failed ${scriptName} ${String(e.event.data.reason)}`
        ctx.notes[key] = (ctx.notes[key] ?? 0) + 1
      }
    },
  }
}

/** The notes a case must end with: each script refused once, with its reason. */
export function expectedRefusals(spec: MapCaseSpec): Record<string, number> {
  return Object.fromEntries(Object.entries(spec.scripts).map(([n, s]) => [`sourcemap_failed ${n} ${s.reason}`, 1]))
}
