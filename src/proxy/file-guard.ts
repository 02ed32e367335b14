// What a CDP client may not make a browser that runs as the daemon's own user do: open file: URLs
// (the daemon's token and log are readable to that uid) and hand files of the data dir to a page or
// download into it. Chromium refuses file: navigations a page starts; only browser-side ones (these
// commands) get there, and once in a file: page its scripts could walk to any file, so every file:
// URL is refused, not only those under the data dir.
import { realpathSync } from 'node:fs'
import { dirname, isAbsolute, relative, resolve } from 'node:path'

export interface FileGuardOptions {
  /** Directories whose files no command may name (the data dir), resolved through symlinks. */
  protectedDirs: readonly string[]
  /** Directories inside those that commands may still name (upload roots: files agents upload). */
  allowedDirs: readonly string[]
}

/** Methods that take URLs, paths or nested commands; a frame naming none of them is relayed unparsed. */
const WATCHED = [
  'navigate',
  'createTarget',
  'FileInputFiles',
  'DragEvent',
  'FileChooser',
  'DownloadBehavior',
  'sendMessageToTarget',
]
const WATCHED_BYTES = WATCHED.map(w => Buffer.from(w))
const BACKSLASH = 0x5c

type Command = { id?: unknown; method?: unknown; sessionId?: unknown; params?: Record<string, unknown> }

/** Without the leading C0 controls and spaces URL parsers skip. */
function trimC0(s: string): string {
  let i = 0
  while (i < s.length && s.charCodeAt(i) <= 0x20) i++
  return s.slice(i)
}

/** Whether a URL opens a local file (view-source: wrappers and URL-parser leniency included). */
export function isFileUrl(url: string): boolean {
  let s = url
  for (;;) {
    let u: URL
    try {
      u = new URL(s)
    } catch {
      // Unparsable here: refuse what Chromium might still read as a file (a bare path, file:…).
      return /^(view-source:|file:|\/|\\|~)/i.test(trimC0(s))
    }
    if (u.protocol === 'file:') return true
    if (u.protocol !== 'view-source:') return false
    s = trimC0(s).slice('view-source:'.length)
  }
}

/** The path with symlinks resolved, through its nearest existing ancestor when it does not exist yet. */
function realOf(path: string): string {
  let p = resolve(path)
  const rest: string[] = []
  for (;;) {
    try {
      return resolve(realpathSync(p), ...rest.reverse())
    } catch {
      const up = dirname(p)
      if (up === p) return resolve(path)
      rest.push(p.slice(up.length).replace(/^\//, ''))
      p = up
    }
  }
}

const within = (path: string, dir: string) => {
  const r = relative(dir, path)
  return r === '' || (!r.startsWith('..') && !isAbsolute(r))
}

export class FileGuard {
  private readonly protectedDirs: string[]
  private readonly allowedDirs: string[]

  constructor(opts: FileGuardOptions) {
    this.protectedDirs = opts.protectedDirs.map(realOf)
    this.allowedDirs = opts.allowedDirs.map(realOf)
  }

  /** Why a path may not be handed to the browser, or undefined. */
  refusePath(path: unknown): string | undefined {
    if (typeof path !== 'string') return undefined
    const real = realOf(path)
    if (this.allowedDirs.some(d => within(real, d))) return undefined
    return this.protectedDirs.some(d => within(real, d))
      ? `${JSON.stringify(path)} is inside the daemon's data dir, which the browser shares a user with`
      : undefined
  }

  /** Why a command is refused, or undefined. */
  refuseCommand(msg: Command): string | undefined {
    const p = msg.params ?? {}
    switch (msg.method) {
      case 'Page.navigate':
      case 'Target.createTarget':
        return typeof p.url === 'string' && isFileUrl(p.url)
          ? 'file: URLs are refused: the browser runs as the daemon’s user, which can read its token and log'
          : undefined
      case 'DOM.setFileInputFiles':
      case 'Page.handleFileChooser':
        return Array.isArray(p.files) ? firstOf(p.files.map(f => this.refusePath(f))) : undefined
      case 'Input.dispatchDragEvent': {
        const files = (p.data as { files?: unknown } | undefined)?.files
        return Array.isArray(files) ? firstOf(files.map(f => this.refusePath(f))) : undefined
      }
      case 'Browser.setDownloadBehavior':
      case 'Page.setDownloadBehavior':
        return this.refusePath(p.downloadPath)
      case 'Target.sendMessageToTarget': {
        if (typeof p.message !== 'string') return undefined
        const inner = parse(p.message)
        return inner ? this.refuseCommand(inner) : undefined
      }
      default:
        return undefined
    }
  }

  /**
   * The error answer for a client frame the browser must not see, or undefined to relay it. Frames
   * naming none of the watched methods (and without escapes, which could spell one) are not parsed.
   */
  answer(data: Buffer): string | undefined {
    if (!data.includes(BACKSLASH) && !WATCHED_BYTES.some(w => data.includes(w))) return undefined
    const msg = parse(data.toString())
    if (!msg) return undefined
    const reason = this.refuseCommand(msg)
    if (reason === undefined) return undefined
    return JSON.stringify({
      id: msg.id,
      ...(typeof msg.sessionId === 'string' ? { sessionId: msg.sessionId } : {}),
      error: { code: -32000, message: `browser-telemetry: ${reason}` },
    })
  }
}

function parse(text: string): Command | undefined {
  try {
    const v: unknown = JSON.parse(text)
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Command) : undefined
  } catch {
    return undefined
  }
}

const firstOf = (xs: (string | undefined)[]) => xs.find(x => x !== undefined)
