// Whether the screen recording is on: set at start by --recording, toggled at runtime by the capture
// config (`{"recording": {"enabled": true}}` in PUT/PATCH /browsers/{id}/telemetry). The capture plan
// follows it (src/daemon/steps.ts), so pages get or lose the screencast collector live.

export class RecordingSwitch {
  private on: boolean
  private readonly listeners = new Set<(enabled: boolean) => void>()

  constructor(enabled = false) {
    this.on = enabled
  }

  get enabled(): boolean {
    return this.on
  }

  /** Returns whether it changed; listeners hear only changes. */
  set(enabled: boolean): boolean {
    if (enabled === this.on) return false
    this.on = enabled
    for (const l of this.listeners) l(enabled)
    return true
  }

  /** Returns the unsubscribe. */
  onChange(listener: (enabled: boolean) => void): () => void {
    this.listeners.add(listener)
    return () => {
      this.listeners.delete(listener)
    }
  }
}
