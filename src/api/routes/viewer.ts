// GET /viewer/: the session viewer's static assets (built by scripts/build-viewer.mjs into
// dist/viewer). Assets hold no data, so they need no token; the page's own data calls use the
// bearer token against the telemetry routes. The assets, read once at startup (src/api/viewer-assets.ts),
// are served from memory: no request path reaches the disk.
import {
  VIEWER_CSP,
  VIEWER_SECURITY_HEADERS,
  defaultViewerDir,
  loadViewerAssets,
  type ViewerAsset,
  type ViewerAssets,
} from '../viewer-assets.js'
import { Type } from '@sinclair/typebox'
import { ApiError, notFound } from '../errors.js'
import type { ApiContext, ApiRouter } from '../route-table.js'

export { VIEWER_CSP, defaultViewerDir, loadViewerAssets, type ViewerAsset, type ViewerAssets }

export interface ViewerRouteDeps {
  /** Default: loadViewerAssets() from the package's dist/viewer. */
  assets?: ViewerAssets
}

function serve(ctx: ApiContext, assets: ViewerAssets | undefined, name: string): void {
  if (!assets) throw new ApiError(503, 'viewer_not_built', 'the session viewer was not built (run npm run build)')
  const asset = assets.get(name)
  if (!asset) throw notFound(`no viewer asset ${JSON.stringify(name.slice(0, 100))}`)
  for (const [name, value] of Object.entries(VIEWER_SECURITY_HEADERS)) ctx.set(name, value)
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
