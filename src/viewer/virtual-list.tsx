// A virtualised, keyboard-navigable list: @tanstack/virtual-core does the windowing (only the rows
// in view plus a small overscan are in the DOM); this is the Preact glue (the same hook shape as
// @tanstack/react-virtual) plus arrow-key selection.
import { Virtualizer, elementScroll, observeElementOffset, observeElementRect } from '@tanstack/virtual-core'
import type { ComponentChildren } from 'preact'
import { useEffect, useLayoutEffect, useReducer, useRef, useState } from 'preact/hooks'

export interface VirtualListProps {
  id: string
  label: string
  count: number
  rowHeight: number
  selected: number
  onSelect(index: number): void
  /** Row index to bring into view when it changes (jump to seq, follow mode). */
  scrollTo?: { index: number; align: 'start' | 'center' | 'end' | 'auto'; nonce: number }
  /** Called with the first/last visible index (history paging near the edges). */
  onRange?(first: number, last: number): void
  renderRow(index: number): ComponentChildren
  rowId(index: number): string
  rowClass?(index: number): string
  /** Tree rows: ArrowRight opens the selected row, ArrowLeft closes it. */
  onExpand?(index: number, open: boolean): void
}

export function VirtualList(p: VirtualListProps) {
  const scrollRef = useRef<HTMLDivElement>(null)
  const [, rerender] = useReducer((x: number) => x + 1, 0)
  const [v] = useState(
    () =>
      new Virtualizer<HTMLDivElement, HTMLDivElement>({
        count: p.count,
        getScrollElement: () => scrollRef.current,
        estimateSize: () => p.rowHeight,
        overscan: 8,
        scrollToFn: elementScroll,
        observeElementRect,
        observeElementOffset,
        onChange: () => rerender(0),
      }),
  )
  v.setOptions({
    ...v.options,
    count: p.count,
    estimateSize: () => p.rowHeight,
    getScrollElement: () => scrollRef.current,
    onChange: () => rerender(0),
  })
  useLayoutEffect(() => v._didMount(), [])
  useLayoutEffect(() => {
    v._willUpdate()
  })
  useEffect(() => {
    if (p.scrollTo && p.scrollTo.index >= 0 && p.scrollTo.index < p.count)
      v.scrollToIndex(p.scrollTo.index, { align: p.scrollTo.align })
  }, [p.scrollTo?.nonce])

  const items = v.getVirtualItems()
  const first = items[0]?.index ?? 0
  const last = items.at(-1)?.index ?? -1
  useEffect(() => {
    p.onRange?.(first, last)
  }, [first, last, p.count])
  // The first rows on screen, for bench/viewer.ts (a performance mark costs nothing otherwise).
  useEffect(() => {
    if (items.length > 0 && performance.getEntriesByName('viewer:first-rows').length === 0) {
      requestAnimationFrame(() => performance.mark('viewer:first-rows'))
    }
  }, [items.length > 0])

  const move = (to: number) => {
    if (p.count === 0) return
    const i = Math.max(0, Math.min(p.count - 1, to))
    p.onSelect(i)
    v.scrollToIndex(i, { align: 'auto' })
  }
  const page = Math.max(1, Math.floor((scrollRef.current?.clientHeight ?? 400) / p.rowHeight) - 1)
  const onKeyDown = (e: KeyboardEvent) => {
    const cur = p.selected < 0 ? -1 : p.selected
    const keys: Record<string, () => void> = {
      ArrowDown: () => move(cur + 1),
      ArrowUp: () => move(cur - 1),
      j: () => move(cur + 1),
      k: () => move(cur - 1),
      PageDown: () => move(cur + page),
      PageUp: () => move(cur - page),
      Home: () => move(0),
      End: () => move(p.count - 1),
    }
    if (p.onExpand && cur >= 0) {
      keys.ArrowRight = () => p.onExpand!(cur, true)
      keys.ArrowLeft = () => p.onExpand!(cur, false)
    }
    const f = keys[e.key]
    if (f && !e.altKey && !e.ctrlKey && !e.metaKey) {
      e.preventDefault()
      f()
    }
  }

  return (
    <div
      id={p.id}
      ref={scrollRef}
      class="vlist"
      tabIndex={0}
      role="listbox"
      aria-label={p.label}
      aria-activedescendant={
        p.selected >= 0 && p.selected < p.count && p.selected >= first && p.selected <= last
          ? p.rowId(p.selected)
          : undefined
      }
      onKeyDown={onKeyDown}
      data-count={p.count}
    >
      <div class="vlist-inner" role="presentation" style={{ height: `${v.getTotalSize()}px` }}>
        {items.map(it => (
          <div
            key={it.key}
            id={p.rowId(it.index)}
            role="option"
            aria-selected={it.index === p.selected}
            class={`vrow ${it.index === p.selected ? 'selected' : ''} ${p.rowClass?.(it.index) ?? ''}`}
            style={{ height: `${p.rowHeight}px`, transform: `translateY(${it.start}px)` }}
            onClick={() => p.onSelect(it.index)}
            data-index={it.index}
          >
            {p.renderRow(it.index)}
          </div>
        ))}
      </div>
    </div>
  )
}
