// The CSS path of an element, built inside the page (serialised into the interaction script).
//
// Everything lives inside one function body on purpose: the page script is built from
// `cssSelectorFor.toString()`, so the function may not reference anything outside itself.

/**
 * A unique CSS selector for `el` in its own document: `#id` when that id is unique, otherwise a
 * child-combinator path of tag (+ a stable attribute such as data-testid or name, else
 * :nth-of-type when a sibling shares the tag) up to the nearest unique id or to the root.
 * `document.querySelector(result)` returns `el` (checked before returning; if a hostile DOM
 * defeats the short form, a pure tag + :nth-of-type path from the root is used instead).
 * `el` must be connected to a document (not inside a shadow root: pass the retargeted host).
 */
export function cssSelectorFor(el: Element): string {
  const doc = el.ownerDocument
  const esc = (s: string): string => CSS.escape(s)
  // Ordered by how deliberately they were put there for tooling; name is the form-field fallback.
  const stableAttrs = ['data-testid', 'data-test-id', 'data-test', 'data-qa', 'data-cy', 'name']

  const selects = (root: ParentNode, sel: string, target: Element): boolean => {
    try {
      const all = root.querySelectorAll(sel)
      return all.length === 1 && all[0] === target
    } catch {
      return false
    }
  }
  const uniqueId = (e: Element): string | undefined => {
    if (!e.id) return undefined
    const sel = '#' + esc(e.id)
    return selects(doc, sel, e) ? sel : undefined
  }
  // tag, plus :nth-of-type(n) when another sibling has the same type (same local name + namespace).
  const typeStep = (e: Element, parent: Element): string => {
    let index = 0
    let count = 0
    for (let c = parent.firstElementChild; c; c = c.nextElementSibling) {
      if (c.localName === e.localName && c.namespaceURI === e.namespaceURI) {
        count++
        if (c === e) index = count
      }
    }
    const tag = esc(e.localName)
    return count > 1 ? `${tag}:nth-of-type(${index})` : tag
  }
  const plainPath = (e: Element): string => {
    const steps: string[] = []
    for (let cur: Element | null = e; cur; cur = cur.parentElement) {
      steps.unshift(cur.parentElement ? typeStep(cur, cur.parentElement) : esc(cur.localName))
    }
    return steps.join(' > ')
  }

  const own = uniqueId(el)
  if (own) return own
  const steps: string[] = []
  for (let cur: Element | null = el; cur;) {
    if (cur !== el) {
      const anchor = uniqueId(cur)
      if (anchor) {
        steps.unshift(anchor)
        break
      }
    }
    const parent: Element | null = cur.parentElement
    if (!parent) {
      steps.unshift(esc(cur.localName))
      break
    }
    let step: string | undefined
    let done = false
    for (const name of stableAttrs) {
      const value = cur.getAttribute(name)
      if (!value) continue
      const candidate = `${esc(cur.localName)}[${name}="${esc(value)}"]`
      if (selects(doc, candidate, cur)) {
        step = candidate
        done = true
        break
      }
      if (selects(parent, ':scope > ' + candidate, cur)) {
        step = candidate
        break
      }
    }
    steps.unshift(step ?? typeStep(cur, parent))
    if (done) break
    cur = parent
  }
  const selector = steps.join(' > ')
  return selects(doc, selector, el) ? selector : plainPath(el)
}
