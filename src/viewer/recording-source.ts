// The player's RecordingSource over the daemon API: frame pages and JPEGs fetched with the bearer
// token in the Authorization header (never in a URL), the image handed over as a Blob.
import { AuthError } from './event-feed.js'
import type { FramePage, FrameQuery, RecordingFrame, RecordingSource } from './model/recording.js'

export class ApiRecordingSource implements RecordingSource {
  readonly live = true

  constructor(
    readonly base: string,
    readonly browserId: string,
    private readonly token: string,
  ) {}

  private path(suffix: string): string {
    return `${this.base}/browsers/${encodeURIComponent(this.browserId)}/recording${suffix}`
  }

  private get(url: string, signal?: AbortSignal): Promise<Response> {
    return fetch(url, { headers: { authorization: `Bearer ${this.token}` }, signal, cache: 'no-store' })
  }

  async frames(q: FrameQuery, signal?: AbortSignal): Promise<FramePage> {
    const p = new URLSearchParams()
    if (q.offset !== undefined && q.offset > 0) p.set('offset', String(q.offset))
    else if (q.sinceUs !== undefined) p.set('since', new Date(Math.floor(q.sinceUs / 1000)).toISOString())
    if (q.untilUs !== undefined) p.set('until', new Date(Math.ceil(q.untilUs / 1000)).toISOString())
    p.set('limit', String(q.limit ?? 1000))
    const res = await this.get(`${this.path('/frames')}?${p}`, signal)
    if (res.status === 401 || res.status === 403) throw new AuthError(`${res.status}`)
    if (!res.ok) throw new Error(`recording frames: ${res.status}`)
    const items = (await res.json()) as RecordingFrame[]
    const hasMore = res.headers.get('x-has-more') === 'true'
    return { items, hasMore, nextOffset: hasMore ? Number(res.headers.get('x-next-offset') ?? 0) : 0 }
  }

  async image(frameId: number, signal?: AbortSignal): Promise<Blob | undefined> {
    const res = await this.get(this.path(`/frames/${frameId}`), signal)
    if (res.status === 404) return undefined
    if (res.status === 401 || res.status === 403) throw new AuthError(`${res.status}`)
    if (!res.ok) throw new Error(`recording frame ${frameId}: ${res.status}`)
    return res.blob()
  }
}
