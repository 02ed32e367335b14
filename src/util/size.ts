// Byte sizes as users write them: "65536", "64KiB", "1MiB", "4GiB", "512MB". Pure.
const UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  k: 1024,
  kb: 1000,
  kib: 1024,
  m: 1024 ** 2,
  mb: 1000 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gb: 1000 ** 3,
  gib: 1024 ** 3,
}
export function parseSize(text: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(text)
  if (!m) return undefined
  const unit = UNITS[m[2]!.toLowerCase()]
  if (unit === undefined) return undefined
  return Math.floor(Number(m[1]) * unit)
}

/** A byte size in the largest binary unit that holds it whole: 4GiB, 64KiB, 300 (as parseSize reads it back). */
export function formatSize(bytes: number): string {
  for (const [unit, n] of [
    ['GiB', 1024 ** 3],
    ['MiB', 1024 ** 2],
    ['KiB', 1024],
  ] as const)
    if (bytes > 0 && bytes % n === 0) return `${bytes / n}${unit}`
  return String(bytes)
}
