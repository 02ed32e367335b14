// How a stored position reads to a person. Pure and dependency-free: the viewer imports it too.
/**
 * Where an uncaught error was thrown, as people read it: `url:line:column`, 1-based like every
 * stack a reader prints (console_error stores CDP's 0-based `line` and `column`). Undefined
 * without a source URL.
 */
export function exceptionLocation(d: { source_url?: string; line?: number; column?: number }): string | undefined {
  if (d.source_url === undefined) return undefined
  if (d.line === undefined) return d.source_url
  return `${d.source_url}:${d.line + 1}${d.column !== undefined ? `:${d.column + 1}` : ''}`
}
