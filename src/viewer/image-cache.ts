// The player's frame images as blob: URLs (fetched with the bearer token, so never an <img> pointing
// at the API): at most IMAGE_CACHE alive, least recently shown revoked first.

/** Blob URLs alive at most (each holds one JPEG). */
export const IMAGE_CACHE = 24

/** Blob URLs by frame id, least recently used first; evicted ones are revoked. */
export class ImageCache {
  private readonly urls = new Map<number, string>()
  constructor(private readonly capacity = IMAGE_CACHE) {}
  get size(): number {
    return this.urls.size
  }
  get(id: number): string | undefined {
    const url = this.urls.get(id)
    if (url !== undefined) {
      this.urls.delete(id)
      this.urls.set(id, url)
    }
    return url
  }
  put(id: number, blob: Blob): string {
    const had = this.urls.get(id)
    if (had) return had
    const url = URL.createObjectURL(blob)
    this.urls.set(id, url)
    while (this.urls.size > this.capacity) {
      const [oldId, oldUrl] = this.urls.entries().next().value as [number, string]
      this.urls.delete(oldId)
      URL.revokeObjectURL(oldUrl)
    }
    return url
  }
  clear(): void {
    for (const url of this.urls.values()) URL.revokeObjectURL(url)
    this.urls.clear()
  }
}
