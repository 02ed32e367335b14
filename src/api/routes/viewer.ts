// GET /viewer/: the session viewer's static assets (built by scripts/build-viewer.mjs into
// dist/viewer). Assets hold no data, so they need no token; the page's own data calls use the
// bearer token against the telemetry routes. Files are read once at startup into memory (a few
// hundred KiB) and only names from that listing are served, so no request path reaches the disk.
import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { extname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Type } from '@sinclair/typebox'
import { ApiError, notFound } from '../errors.js'
import type { ApiContext, ApiRouter } from '../route-table.js'

/**
 * `default-src 'self'` and nothing inline; screenshots are shown as data: images and recording
 * frames (fetched with the bearer token) as blob: URLs, hence img-src.
 */
export const VIEWER_CSP = [
  "default-src 'self'",
  "img-src 'self' data: blob:",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ')

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
}

export interface ViewerAsset {
  body: Buffer
  contentType: string
  etag: string
  immutable: boolean
}
export type ViewerAssets = Map<string, ViewerAsset>

/** Where the built assets are: dist/viewer, seen from dist/src/api/routes (built) or src/api/routes (tsx). */
export function defaultViewerDir(): string {
  const up = fileURLToPath(new URL('../../../', import.meta.url))
  for (const dir of [join(up, 'viewer'), join(up, 'dist', 'viewer')])
    if (existsSync(join(dir, 'index.html'))) return dir
  return join(up, 'dist', 'viewer')
}

/** Reads the built viewer; undefined when it was not built (the route then answers 503 saying so). */
export function loadViewerAssets(dir: string = defaultViewerDir()): ViewerAssets | undefined {
  if (!existsSync(join(dir, 'index.html'))) return undefined
  const assets: ViewerAssets = new Map()
  for (const name of readdirSync(dir)) {
    const type = CONTENT_TYPES[extname(name)]
    const path = join(dir, name)
    if (!type || !/^[A-Za-z0-9._-]+$/.test(name) || !statSync(path).isFile()) continue
    const body = readFileSync(path)
    assets.set(name, {
      body,
      contentType: type,
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
      // esbuild names bundles name-HASH.ext: their content never changes under that name.
      immutable: /-[A-Z0-9]{8,}\.(js|css)$/.test(name),
    })
  }
  return assets
}

export interface ViewerRouteDeps {
  /** Default: loadViewerAssets() from the package's dist/viewer. */
  assets?: ViewerAssets
}

function serve(ctx: ApiContext, assets: ViewerAssets | undefined, name: string): void {
  if (!assets) throw new ApiError(503, 'viewer_not_built', 'the session viewer was not built (run npm run build)')
  const asset = assets.get(name)
  if (!asset) throw notFound(`no viewer asset ${JSON.stringify(name.slice(0, 100))}`)
  ctx.set('Content-Security-Policy', VIEWER_CSP)
  ctx.set('X-Content-Type-Options', 'nosniff')
  ctx.set('Referrer-Policy', 'no-referrer')
  ctx.set('Cross-Origin-Opener-Policy', 'same-origin')
  ctx.set('Cross-Origin-Resource-Policy', 'same-origin')
  // The page revalidates (a daemon upgrade ships new bundle names); hashed bundles are cached for good.
  ctx.set('Cache-Control', asset.immutable ? 'public, max-age=31536000, immutable' : 'no-cache')
  ctx.set('ETag', asset.etag)
  ctx.type = asset.contentType
  const inm = ctx.get('If-None-Match')
  if (inm && inm.split(',').some(tag => tag.trim().replace(/^W\//, '') === asset.etag)) {
    ctx.status = 304
    return
  }
  ctx.status = 200
  ctx.body = asset.body
}

export function registerViewerRoutes(router: ApiRouter, deps: ViewerRouteDeps = {}): void {
  const assets = 'assets' in deps ? deps.assets : loadViewerAssets()
  const common = { scope: null, public: true, skipApiCall: true } as const
  router.add({
    ...common,
    method: 'GET',
    path: '/viewer/',
    operationId: 'getViewer',
    summary: 'The session viewer page (no authentication: it holds no data; it asks for a read-scope token)',
    description:
      'Static HTML with a strict Content-Security-Policy. Open it with `browser-telemetry open`, which adds the token in the URL fragment.',
    responses: {
      200: { description: 'The viewer page', contentType: 'text/html', schema: Type.String() },
      304: { description: 'Not modified' },
      308: { description: '/viewer redirects to /viewer/ (the page loads its assets relative to it)' },
    },
    handler: async ctx => {
      // The router matches /viewer and /viewer/ alike; relative asset URLs need the slash.
      if (!ctx.path.endsWith('/')) {
        ctx.status = 308
        ctx.redirect('/viewer/')
        return
      }
      serve(ctx, assets, 'index.html')
    },
  })
  // After /viewer/, which the router would otherwise also match for this path.
  router.add({
    ...common,
    method: 'GET',
    path: '/viewer',
    operationId: 'redirectViewer',
    summary: 'Redirects to /viewer/',
    responses: { 308: { description: 'Permanent redirect to /viewer/' } },
    handler: async ctx => {
      ctx.status = 308
      ctx.redirect('/viewer/')
    },
  })
  router.add({
    ...common,
    method: 'GET',
    path: '/viewer/:file',
    operationId: 'getViewerAsset',
    summary: 'A static asset of the session viewer (script, stylesheet)',
    responses: {
      200: { description: 'The asset', contentType: 'application/octet-stream', schema: Type.String() },
      304: { description: 'Not modified' },
    },
    handler: async ctx => serve(ctx, assets, String(ctx.params.file)),
  })
}
