// Whether the screen recording is on: set at start by --recording, toggled at runtime by the capture
// config (`{"recording": {"enabled": true}}` in PUT/PATCH /browsers/{id}/telemetry). The capture plan
// follows it (src/daemon/stages.ts), so pages get or lose the screencast collector live.
import { Toggle } from '../util/toggle.js'

export class RecordingSwitch extends Toggle {}
