// An on/off setting changed at runtime (the capture config's recording and masked keys): its
// state, and listeners that hear only changes.

export class Toggle {
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
