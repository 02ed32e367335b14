// A count of things in progress under a bound (uploads, exports): one is taken or refused with the
// caller's error, and given back once, however many times its release is called.
export class Slots {
  private inUse = 0
  constructor(
    readonly max: number,
    private readonly refusal: (max: number) => Error,
  ) {}

  get active(): number {
    return this.inUse
  }

  /** Takes a slot or throws the refusal; call the result once done (again is a no-op). */
  take(): () => void {
    if (this.inUse >= this.max) throw this.refusal(this.max)
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
