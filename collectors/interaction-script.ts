// The script the interaction collector injects into every document (in an isolated world, so the
// page can neither see the binding nor patch the DOM APIs the script relies on).
//
// Each exported function here runs in the page and is serialised with Function.prototype.toString,
// so a function body may only use its parameters, its own locals and browser globals. The helpers
// reach the agent as parameters (see buildInteractionScript) instead of as module references.
import { cssSelectorFor } from './selector.js'

/** Messages the page sends through the binding (untrusted on arrival: see parseInteractionPayload). */
export type PagePayload =
  | { t: 'click'; x: number; y: number; selector: string; tag: string; text: string }
  | { t: 'key'; key: string; selector: string; tag: string; c: boolean }
  | { t: 'input'; input_type: string; selector: string; tag: string }
  | { t: 'scroll'; from_x: number; from_y: number; to_x: number; to_y: number; target_selector: string }

export interface AgentOptions {
  /** Quiet time after the last scroll event before a scroll counts as settled. */
  scrollQuietMs: number
  /** Cap on click text (UTF-16 units, the event schema's maxLength). */
  textMax: number
}

/**
 * True for fields whose keystrokes and text must never be recorded: password inputs, fields with
 * a sensitive autocomplete token, and fields whose name or id says password/secret/cvv/ssn/card
 * number and the like (camelCase and snake_case alike).
 */
export function isSensitiveField(el: Element): boolean {
  if (el.localName === 'input' && (el.getAttribute('type') ?? '').trim().toLowerCase() === 'password') return true
  const tokens = (el.getAttribute('autocomplete') ?? '').toLowerCase().split(/\s+/)
  for (const token of tokens) {
    if (
      token === 'one-time-code' ||
      token === 'current-password' ||
      token === 'new-password' ||
      token.startsWith('cc-')
    )
      return true
  }
  const sensitiveName =
    /passw|passwd|pwd|passcode|passphrase|secret|cvv|cvc|social.?security|security.?code|credit.?card|card.?(num|no([^a-z]|$))|cc.?(num|no([^a-z]|$))|one.?time|(^|[^a-z])(csc|ssn|pin|otp|iban)([^a-z]|$)/
  for (const attr of ['name', 'id']) {
    const value = el.getAttribute(attr)
    if (!value) continue
    // "cardNumber" -> "card_number" so the word boundaries above see camelCase words too.
    const words = value.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase()
    if (sensitiveName.test(words)) return true
  }
  return false
}

/**
 * True when a key event's target hides where the keys really go: the event reached us retargeted
 * to an element that cannot hold the focus itself, so the focused field sits in a closed shadow
 * root we cannot inspect (composedPath() stops at its host). Custom elements count as opaque for
 * the same reason. Privacy wins: such keys are not reported.
 */
export function isOpaqueKeyTarget(target: Element, inner: Element): boolean {
  if (inner !== target) return false // an open shadow root: the real field is visible
  const doc = target.ownerDocument
  if (target === doc.body || target === doc.documentElement) return false
  if (target.localName.includes('-')) return true
  if ((target as HTMLElement).isContentEditable || target.hasAttribute('tabindex')) return false
  if (/^(input|textarea|select|button|iframe|summary|audio|video|embed|object)$/.test(target.localName)) return false
  if ((target.localName === 'a' || target.localName === 'area') && target.hasAttribute('href')) return false
  return true
}

/**
 * Trimmed, whitespace-collapsed visible text of a clicked element, at most `max` UTF-16 units
 * (never ending in half a surrogate pair). Blank for sensitive fields and for anything the user
 * types into (text inputs, textareas, contenteditable), whose text is user data, not a label.
 */
export function clickText(el: Element, max: number, isSensitive: (el: Element) => boolean): string {
  if (isSensitive(el)) return ''
  let text = ''
  if (el.localName === 'input') {
    const type = (el.getAttribute('type') ?? '').toLowerCase()
    if (type === 'button' || type === 'submit' || type === 'reset') text = (el as HTMLInputElement).value
  } else if (el.localName === 'textarea') {
    text = ''
  } else if (el.localName === 'select') {
    text = (el as HTMLSelectElement).selectedOptions[0]?.text ?? ''
  } else if (el instanceof HTMLElement) {
    text = el.isContentEditable ? '' : el.innerText
  } else {
    text = el.textContent ?? ''
  }
  text = text.replace(/\s+/g, ' ').trim()
  if (text.length > max) {
    let end = max
    const code = text.charCodeAt(end - 1)
    if (code >= 0xd800 && code <= 0xdbff) end--
    text = text.slice(0, end).trimEnd()
  }
  return text
}

export interface AgentHelpers {
  cssSelectorFor: (el: Element) => string
  isSensitiveField: (el: Element) => boolean
  isOpaqueKeyTarget: (target: Element, inner: Element) => boolean
  clickText: (el: Element, max: number, isSensitive: (el: Element) => boolean) => string
}

/** What the listener groups share once the agent is installed (the helpers and the binding's send). */
export interface AgentKit extends AgentHelpers {
  send: (payload: PagePayload) => void
  options: AgentOptions
  isElement: (v: unknown) => v is Element
  /** The innermost element an event came from (open shadow roots included). */
  innermost: (e: Event) => Element | undefined
}

/** The groups of listeners, in the order they are added (listeners of one event run in that order). */
export interface AgentListeners {
  listenClicksAndKeys: (kit: AgentKit) => void
  listenTypedInput: (kit: AgentKit) => void
  listenScrolls: (kit: AgentKit) => void
}

/**
 * Installs the listeners once per world (idempotent: later runs in the same world return early).
 * Only trusted events count, so page script calling el.click() or dispatching fake key events
 * cannot forge interactions.
 */
export function installInteractionAgent(
  bindingName: string,
  options: AgentOptions,
  helpers: AgentHelpers,
  listeners: AgentListeners,
): void {
  // Page-world globals by name (Reflect: no cast of window to a record type).
  const guard = '__browserTelemetryInteraction'
  if (Reflect.get(window, guard)) return
  const binding: unknown = Reflect.get(window, bindingName)
  // No binding yet (addBinding failed or raced): leave the guard unset so a later run can install.
  if (typeof binding !== 'function') return
  Reflect.set(window, guard, true)
  const send = (payload: PagePayload): void => {
    try {
      ;(binding as (s: string) => void)(JSON.stringify(payload))
    } catch {
      /* binding gone with the session */
    }
  }
  const isElement = (v: unknown): v is Element => typeof v === 'object' && v !== null && (v as Node).nodeType === 1
  // The innermost element the event came from (inside open shadow roots; a closed root ends at its
  // host): what the privacy rules must look at.
  const innermost = (e: Event): Element | undefined => {
    const first = e.composedPath()[0]
    return isElement(first) ? first : undefined
  }
  const kit: AgentKit = { ...helpers, send, options, isElement, innermost }
  listeners.listenClicksAndKeys(kit)
  listeners.listenTypedInput(kit)
  listeners.listenScrolls(kit)
}

/** Clicks (with their position in top-level viewport pixels) and keys, as the privacy rules allow. */
export function listenClicksAndKeys(kit: AgentKit): void {
  const { send, options, isElement, innermost, cssSelectorFor, isSensitiveField, isOpaqueKeyTarget, clickText } = kit
  // Offset of this frame's viewport inside the top-level viewport, so click coordinates of a
  // same-process iframe are top-level viewport pixels like the page's own. Stops at a
  // cross-origin boundary (an out-of-process frame reports from its own session instead).
  const frameOffset = (): { x: number; y: number } => {
    let x = 0
    let y = 0
    try {
      for (let cur: Window = window; cur !== cur.parent; cur = cur.parent) {
        const frame = cur.frameElement
        if (!frame) break
        const rect = frame.getBoundingClientRect()
        const style = frame.ownerDocument.defaultView?.getComputedStyle(frame)
        x += rect.left + frame.clientLeft + (style ? parseFloat(style.paddingLeft) || 0 : 0)
        y += rect.top + frame.clientTop + (style ? parseFloat(style.paddingTop) || 0 : 0)
      }
    } catch {
      /* cross-origin ancestor */
    }
    return { x, y }
  }

  window.addEventListener(
    'click',
    e => {
      if (!e.isTrusted || !isElement(e.target)) return
      const target = e.target
      const inner = innermost(e) ?? target
      const offset = frameOffset()
      const sensitive = isSensitiveField(inner) || isSensitiveField(target)
      // A click activated from the keyboard (Enter/Space: detail 0) has no pointer position; the
      // element's centre says where it happened instead of a misleading 0,0.
      let { clientX: x, clientY: y } = e
      if (e.detail === 0 && x === 0 && y === 0) {
        const rect = target.getBoundingClientRect()
        x = rect.left + rect.width / 2
        y = rect.top + rect.height / 2
      }
      send({
        t: 'click',
        x: Math.round(x + offset.x),
        y: Math.round(y + offset.y),
        selector: cssSelectorFor(target),
        tag: target.tagName.toUpperCase(),
        text: sensitive ? '' : clickText(inner, options.textMax, isSensitiveField),
      })
    },
    { capture: true },
  )

  window.addEventListener(
    'keydown',
    e => {
      if (!e.isTrusted) return
      const target = isElement(e.target) ? e.target : (document.activeElement ?? document.documentElement)
      const inner = innermost(e) ?? target
      if (isSensitiveField(inner) || isSensitiveField(target) || isOpaqueKeyTarget(target, inner)) return
      // c: a command modifier is held (a shortcut, not text); AltGr types characters, so it is not one.
      const command = (e.ctrlKey || e.metaKey || e.altKey) && !e.getModifierState('AltGraph')
      send({ t: 'key', key: e.key, selector: cssSelectorFor(target), tag: target.tagName.toUpperCase(), c: command })
    },
    { capture: true },
  )
}

/** Text put in without a key (insertText, paste, drop, autofill): where it went, never what. */
export function listenTypedInput(kit: AgentKit): void {
  const { send, isElement, cssSelectorFor } = kit
  // Text that arrives without a key (an automation client's Input.insertText, as Playwright's fill
  // sends it, a paste from the menu, a drop, autofill) has no key report to say where it went: its
  // input event does. Input while a key that types is down is that key's (already reported). Not
  // a timer: Chromium runs input tasks ahead of timers, so the next insertText may come first.
  const down = new Set<string>()
  const MODIFIERS = ['Shift', 'Control', 'Alt', 'Meta', 'AltGraph', 'CapsLock']
  window.addEventListener(
    'keydown',
    e => {
      if (e.isTrusted && !MODIFIERS.includes(e.key)) down.add(e.code || e.key)
    },
    { capture: true, passive: true },
  )
  window.addEventListener(
    'keyup',
    e => {
      down.delete(e.code || e.key)
    },
    { capture: true, passive: true },
  )
  // A key released while the window had no focus never sends its keyup.
  window.addEventListener('blur', () => down.clear(), { passive: true })
  window.addEventListener(
    'input',
    e => {
      if (!e.isTrusted || down.size > 0 || !isElement(e.target)) return
      const target = e.target
      // What was put in is never read; the field's name alone (as a click reports it).
      const inputType = (e as InputEvent).inputType
      send({
        t: 'input',
        input_type: typeof inputType === 'string' ? inputType.slice(0, 64) : '',
        selector: cssSelectorFor(target),
        tag: target.tagName.toUpperCase(),
      })
    },
    { capture: true, passive: true },
  )
}

/** Scrolls, one report per burst once it settles, from where it started to where it ended. */
export function listenScrolls(kit: AgentKit): void {
  const { send, options, isElement, cssSelectorFor } = kit
  // Scroll: `from` must be where a burst started, but the first scroll event of a burst already
  // sees the moved position. So positions are remembered: the document's at install time and at
  // every settle; an element's when the pointer enters it, on pointerdown (scrollbar drags), on
  // keydown (keyboard scrolling) and touchstart, all of which precede the scroll they may cause.
  // Not on wheel: with passive listeners Chromium scrolls on the compositor before the wheel
  // event reaches the page. An element never seen before starts at 0,0, where every element starts.
  type Pos = { x: number; y: number }
  const settled = new WeakMap<object, Pos>()
  const bursts = new Map<object, { from: Pos; timer: ReturnType<typeof setTimeout> }>()
  const positionOf = (target: Element | Document): Pos =>
    target === document
      ? { x: window.scrollX, y: window.scrollY }
      : { x: (target as Element).scrollLeft, y: (target as Element).scrollTop }
  settled.set(document, positionOf(document))
  const noteOrigins = (e: Event): void => {
    for (const node of e.composedPath()) {
      if (isElement(node) && !settled.has(node) && !bursts.has(node)) settled.set(node, positionOf(node))
    }
  }
  for (const type of ['pointerover', 'pointerdown', 'keydown', 'touchstart']) {
    window.addEventListener(type, noteOrigins, { capture: true, passive: true })
  }
  window.addEventListener(
    'scroll',
    e => {
      if (!e.isTrusted) return
      const target = e.target === document ? document : isElement(e.target) ? e.target : undefined
      if (!target) return
      const previous = bursts.get(target)
      if (previous) clearTimeout(previous.timer)
      const start = previous?.from ?? settled.get(target) ?? { x: 0, y: 0 }
      const timer = setTimeout(() => {
        bursts.delete(target)
        const to = positionOf(target)
        settled.set(target, to)
        if (target !== document && !(target as Element).isConnected) return
        const from = { x: Math.round(start.x), y: Math.round(start.y) }
        const end = { x: Math.round(to.x), y: Math.round(to.y) }
        if (from.x === end.x && from.y === end.y) return
        send({
          t: 'scroll',
          from_x: from.x,
          from_y: from.y,
          to_x: end.x,
          to_y: end.y,
          target_selector: target === document ? 'document' : cssSelectorFor(target as Element),
        })
      }, options.scrollQuietMs)
      bursts.set(target, { from: start, timer })
    },
    { capture: true, passive: true },
  )
}

/**
 * The complete injected source: the helpers, the listener groups and the agent, called with this collector's binding.
 * `__name` is defined because TS loaders that keep function names (tsx/esbuild keepNames) wrap
 * nested functions in calls to it, and those calls travel with toString() into the page.
 */
export function buildInteractionScript(bindingName: string, options: AgentOptions): string {
  return `(() => {
const __name = (fn) => fn;
const helpers = {
  cssSelectorFor: (${cssSelectorFor.toString()}),
  isSensitiveField: (${isSensitiveField.toString()}),
  isOpaqueKeyTarget: (${isOpaqueKeyTarget.toString()}),
  clickText: (${clickText.toString()}),
};
const listeners = {
  listenClicksAndKeys: (${listenClicksAndKeys.toString()}),
  listenTypedInput: (${listenTypedInput.toString()}),
  listenScrolls: (${listenScrolls.toString()}),
};
(${installInteractionAgent.toString()})(${JSON.stringify(bindingName)}, ${JSON.stringify(options)}, helpers, listeners);
})()`
}
