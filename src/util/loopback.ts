// Whether a host name or address stays on this machine: 127.0.0.0/8, ::1 (also IPv4-mapped) and localhost.

/** A host (optionally [bracketed], without a port) that only this machine can reach. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase()
  return (
    h === 'localhost' || h.endsWith('.localhost') || h === '::1' || /^(::ffff:)?127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h)
  )
}

/** The host of a Host header value (`host`, `host:port`, `[v6]:port`), lower-cased; undefined when malformed. */
export function hostOfHeader(value: string | undefined): string | undefined {
  if (!value) return undefined
  const m = /^(\[[0-9a-f:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/i.exec(value.trim())
  return m ? m[1]!.toLowerCase() : undefined
}
