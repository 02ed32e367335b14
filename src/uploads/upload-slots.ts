// The cap on uploads in progress (spooling, waiting for the extraction queue, or extracting), shared
// by upload_zip and the extension upload: each holds a spool file and the queue must stay short.
import { Slots } from '../util/slots.js'
import { tooManyUploads } from './errors.js'

/** Past the cap, 429 too_many_requests (with Retry-After). */
export class UploadSlots extends Slots {
  constructor(max: number) {
    super(max, tooManyUploads)
  }
}
