// A FIFO over an array with a moving head: shift() is O(1), a taken slot is cleared at once (a
// queued Buffer can be collected while the rest waits), and the array is cut back when it empties
// or once the head has passed a thousand slots.

const COMPACT_AFTER = 1024

export class Queue<T> {
  private items: (T | undefined)[] = []
  private head = 0

  get length(): number {
    return this.items.length - this.head
  }

  push(item: T): void {
    this.items.push(item)
  }

  /** The oldest item, left in place. */
  peek(): T | undefined {
    return this.items[this.head]
  }

  /** Takes the oldest item (undefined when empty). */
  shift(): T | undefined {
    if (this.head === this.items.length) return undefined
    const item = this.items[this.head]
    this.items[this.head++] = undefined
    if (this.head === this.items.length) {
      this.items.length = 0
      this.head = 0
    } else if (this.head > COMPACT_AFTER) {
      this.items.splice(0, this.head)
      this.head = 0
    }
    return item
  }

  clear(): void {
    this.items = []
    this.head = 0
  }
}
