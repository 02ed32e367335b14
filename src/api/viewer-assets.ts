// The session viewer's built assets (scripts/build-viewer.mjs -> dist/viewer) and the headers they
// are served with. Shared by the daemon's /viewer/ route and `browser-telemetry view` (which serves
// the same page for a bundle, with no daemon). Files are read once into memory (a few hundred KiB);
// only names from that listing are served, so no request path reaches the disk.
import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { extname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * `default-src 'self'` and nothing inline; screenshots are data: images and a bundle's recording
 * frames blob: images (read from the zip in the page), hence img-src.
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

/** The response headers of every viewer asset (the daemon's /viewer/ and `browser-telemetry view`). */
export const VIEWER_SECURITY_HEADERS: Record<string, string> = {
  'Content-Security-Policy': VIEWER_CSP,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
}

/** Where the built assets are: dist/viewer, seen from dist/src/api (built) or src/api (tsx). */
export function defaultViewerDir(): string {
  const up = fileURLToPath(new URL('../../', import.meta.url))
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
