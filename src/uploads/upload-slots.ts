// The cap on uploads in progress (spooling, waiting for the extraction queue, or extracting), shared
// by upload_zip and the extension upload: each holds a spool file and the queue must stay short.
import { tooManyUploads } from './errors.js'

export class UploadSlots {
  private inUse = 0
  constructor(readonly max: number) {}

  get active(): number {
    return this.inUse
  }

  /** Takes a slot or throws 429 too_many_requests (with Retry-After); call the result once done. */
  take(): () => void {
    if (this.inUse >= this.max) throw tooManyUploads(this.max)
    this.inUse++
    let released = false
    return () => {
      if (!released) {
        released = true
        this.inUse--
      }
    }
  }
}
