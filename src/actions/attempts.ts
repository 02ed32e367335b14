// An input call that failed before it sent its input: Playwright's click on an element that never
// became clickable polls the page with script calls until its timeout, then throws, and the agent
// ends its step with that error ("locator.click: Timeout 5000ms exceeded ... waiting for
// locator('#buy')"). Read alone, the polls are evaluates; the step's error says they were one click
// that failed. Only the error message is read (never a typed value).
import { draft, push, sameStep, PREP_GAP_US, type Attempt, type Draft } from './group.js'

/** The failing Playwright call in an error message (`locator.click:`), wherever the agent put it. */
const CALL = /\b(?:page|frame|locator|elementHandle|frameLocator)\.(\w+): /
/** The element the call waited for, from its call log. */
const WAITING = /waiting for ([^\n]+)/
/** A selector in a title at most (characters). */
const TARGET_MAX = 80

/** Playwright's input calls: the kind of action each is and the verb of its title. */
const CALLS: Record<string, [Attempt['kind'], string]> = {
  click: ['click', 'click'],
  dblclick: ['click', 'double-click'],
  tap: ['click', 'tap'],
  check: ['click', 'check'],
  uncheck: ['click', 'uncheck'],
  setChecked: ['click', 'check'],
  hover: ['other', 'hover'],
  dragTo: ['other', 'drag'],
  fill: ['type', 'fill'],
  clear: ['type', 'clear'],
  type: ['type', 'type into'],
  pressSequentially: ['type', 'type into'],
  press: ['press', 'press a key in'],
  selectOption: ['other', 'select an option in'],
  setInputFiles: ['other', 'set the files of'],
}

/** The failed input call a step's error message names, or undefined when it names none. */
export function attemptOf(message: string): Attempt | undefined {
  const call = CALL.exec(message)
  const known = call ? CALLS[call[1]!] : undefined
  if (!known) return undefined
  const [kind, verb] = known
  let target = WAITING.exec(message)?.[1]?.trim()
  // locator('#buy') is shown as the selector itself.
  const locator = target === undefined ? null : /^locator\('((?:[^'\\]|\\.)*)'\)$/.exec(target)
  if (locator) target = locator[1]!
  if (target !== undefined && [...target].length > TARGET_MAX)
    target = [...target].slice(0, TARGET_MAX - 1).join('') + '…'
  return { kind, title: target ? `${verb} ${target}` : verb, error: message }
}

/**
 * Per failed step whose error names an input call: the evaluate drafts that end the step's run in
 * this stream (each at most PREP_GAP_US after the one before) become one attempt draft. `drafts`
 * is one stream's, in order; `errors` maps a failed step to its error message.
 */
export function markAttempts(drafts: Draft[], errors: ReadonlyMap<string, string>): Draft[] {
  if (errors.size === 0) return drafts
  const out = drafts.slice()
  for (const [step, message] of errors) {
    const attempt = attemptOf(message)
    if (!attempt) continue
    let last = out.length - 1
    while (last >= 0 && (out[last]!.kind === 'setup' || out[last]!.main.step !== step)) last--
    let first = last
    while (
      first >= 0 &&
      out[first]!.kind === 'evaluate' &&
      (first === last || out[first + 1]!.start - out[first]!.end <= PREP_GAP_US) &&
      (first === last || sameStep(out[first]!.main, out[first + 1]!.main))
    )
      first--
    first++
    if (first > last) continue
    const run = out.slice(first, last + 1)
    const d = draft('attempt', run[0]!.main)
    for (const r of run) for (const c of r.cmds) push(d, c)
    d.attempt = attempt
    out.splice(first, run.length, d)
  }
  return out
}
