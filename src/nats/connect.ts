// NATS connection options from the --nats-* settings, shared by the shipper and `fleet` commands.
// Credential files are read at connect time (not at config parse) so a rotated or late-mounted file
// is picked up by the next attempt, and a missing one is a reported connect error, never a crash.
// The client library is imported lazily: config parsing uses this file and must stay light.
import { readFile } from 'node:fs/promises'
import type { ConnectionOptions } from '@nats-io/transport-node'

export interface NatsAuth {
  /** nats://host:port, one or more. */
  servers: string[]
  credsFile?: string
  tokenFile?: string
  /** CA bundle for the server's TLS certificate (turns TLS on). */
  tlsCa?: string
}

export async function connectionOptions(
  auth: NatsAuth,
  extra: Partial<ConnectionOptions> = {},
): Promise<ConnectionOptions> {
  const opts: ConnectionOptions = { servers: auth.servers, ...extra }
  if (auth.credsFile) {
    const { credsAuthenticator } = await import('@nats-io/transport-node')
    opts.authenticator = credsAuthenticator(
      await readFile(auth.credsFile).catch((err: NodeJS.ErrnoException) => {
        throw new Error(`--nats-creds-file ${auth.credsFile}: ${err.code ?? err.message}`)
      }),
    )
  }
  if (auth.tokenFile) {
    const token = (
      await readFile(auth.tokenFile, 'utf8').catch((err: NodeJS.ErrnoException) => {
        throw new Error(`--nats-token-file ${auth.tokenFile}: ${err.code ?? err.message}`)
      })
    ).trim()
    if (token === '') throw new Error(`--nats-token-file ${auth.tokenFile}: file is empty`)
    opts.token = token
  }
  if (auth.tlsCa) opts.tls = { caFile: auth.tlsCa }
  return opts
}

/** Parses `nats://a:4222,nats://b:4222` (scheme optional, tls:// allowed); throws with the bad entry. */
export function parseNatsServers(text: string): string[] {
  const out: string[] = []
  for (const raw of text.split(',')) {
    const s = raw.trim()
    if (s === '') continue
    const m = /^(?:(nats|tls):\/\/)?(?:[^@/\s]+@)?(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?$/.exec(s)
    if (!m || (m[3] !== undefined && Number(m[3]) > 65535))
      throw new Error(`expected nats://host:port, got ${JSON.stringify(s)}`)
    out.push(s)
  }
  if (out.length === 0) throw new Error('expected at least one nats://host:port')
  return out
}

/** nats://user:pass@host -> nats://***@host: credentials never reach logs or /healthz. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@')
}
