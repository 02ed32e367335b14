// A minimal text/event-stream parser (WHATWG "event stream interpretation"): id and data fields,
// comments ignored, events dispatched on a blank line. Chunks may split lines anywhere.
export interface SseMessage {
  id?: string
  event?: string
  data: string
}

export class SseParser {
  private buffer = ''
  private data: string[] = []
  private id: string | undefined
  private event: string | undefined
  private sawData = false

  constructor(private readonly onMessage: (m: SseMessage) => void) {}

  push(chunk: string): void {
    this.buffer += chunk
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buffer)
      if (!m) break
      // A lone \r at the very end may be the first half of \r\n: wait for the next chunk.
      if (m[0] === '\r' && m.index === this.buffer.length - 1) break
      const line = this.buffer.slice(0, m.index)
      this.buffer = this.buffer.slice(m.index + m[0].length)
      this.line(line)
    }
  }

  private line(line: string): void {
    if (line === '') {
      this.dispatch()
      return
    }
    if (line.startsWith(':')) return
    const colon = line.indexOf(':')
    const field = colon === -1 ? line : line.slice(0, colon)
    let value = colon === -1 ? '' : line.slice(colon + 1)
    if (value.startsWith(' ')) value = value.slice(1)
    if (field === 'data') {
      this.data.push(value)
      this.sawData = true
    } else if (field === 'id' && !value.includes('\0')) this.id = value
    else if (field === 'event') this.event = value
  }

  private dispatch(): void {
    if (this.sawData) {
      const msg: SseMessage = { data: this.data.join('\n') }
      if (this.id !== undefined) msg.id = this.id
      if (this.event !== undefined) msg.event = this.event
      this.onMessage(msg)
    }
    this.data = []
    this.sawData = false
    this.event = undefined
  }
}
