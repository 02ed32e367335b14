// The role of a CDP method in an agent's work, by name alone: preparing a target (setup), acting on
// it (navigate, input, screenshot), running script (eval), the helpers that check an element before
// an input (prep), or anything else. Pure rules; derive.ts groups commands by these roles.

export type Role = 'setup' | 'navigate' | 'mouse' | 'key' | 'text' | 'scroll' | 'screenshot' | 'eval' | 'prep' | 'other'

/** Domains whose every method prepares the browser or a target rather than acting on a page. */
const SETUP_DOMAINS = new Set(['Target', 'Browser', 'Emulation', 'SystemInfo', 'Schema'])

/** Setup methods outside those domains and the enable/disable, override and metadata patterns. */
const SETUP_METHODS = new Set([
  'Runtime.runIfWaitingForDebugger',
  'Runtime.addBinding',
  'Runtime.removeBinding',
  'Runtime.setAsyncCallStackDepth',
  'Debugger.setAsyncCallStackDepth',
  'Page.addScriptToEvaluateOnNewDocument',
  'Page.removeScriptToEvaluateOnNewDocument',
  'Page.createIsolatedWorld',
  'Page.setLifecycleEventsEnabled',
  'Page.setBypassCSP',
  'Page.setInterceptFileChooserDialog',
  'Page.setDownloadBehavior',
  'Page.setAdBlockingEnabled',
  'Page.setFontFamilies',
  'Page.setFontSizes',
  'Page.setWebLifecycleState',
  'Network.setExtraHTTPHeaders',
  'Network.setCacheDisabled',
  'Network.setBypassServiceWorker',
  'Network.emulateNetworkConditions',
  'Network.setRequestInterception',
  'Network.setBlockedURLs',
  'Network.setAttachDebugStack',
  'Security.setIgnoreCertificateErrors',
  'Log.startViolationsReport',
  'Log.stopViolationsReport',
])

/** Metadata reads (get*) that count as setup: of these domains (DOM.get* and the like are prep). */
const SETUP_GET_DOMAINS = new Set(['Page', 'Runtime'])
/** ...except these, which read an element or object for an input or an evaluation. */
const NOT_SETUP_GETS = new Set(['Runtime.getProperties'])

const ROLE_OF = new Map<string, Role>([
  ['Page.navigate', 'navigate'],
  ['Page.reload', 'navigate'],
  ['Page.navigateToHistoryEntry', 'navigate'],
  ['Input.dispatchMouseEvent', 'mouse'],
  ['Input.dispatchTouchEvent', 'mouse'],
  ['Input.emulateTouchFromMouseEvent', 'mouse'],
  ['Input.dispatchDragEvent', 'mouse'],
  ['Input.dispatchKeyEvent', 'key'],
  ['Input.insertText', 'text'],
  ['Input.imeSetComposition', 'text'],
  ['Input.synthesizeScrollGesture', 'scroll'],
  ['Page.captureScreenshot', 'screenshot'],
  ['Page.captureSnapshot', 'screenshot'],
  ['Runtime.evaluate', 'eval'],
  ['Runtime.callFunctionOn', 'eval'],
  ['Runtime.releaseObject', 'prep'],
  ['Runtime.releaseObjectGroup', 'prep'],
  ['Runtime.getProperties', 'prep'],
  ['Runtime.awaitPromise', 'prep'],
])

/**
 * The role of a method. Setup: domain `enable`/`disable`; every method of Target, Browser,
 * Emulation, SystemInfo, Schema; any `set…Override…`; isolated worlds, init scripts, bindings, extra
 * headers and the like (SETUP_METHODS); `get…` metadata reads of Page and Runtime. Prep: the DOM
 * domain and Runtime's object helpers (what Playwright's actionability checks send).
 */
export function roleOf(method: string): Role {
  const known = ROLE_OF.get(method)
  if (known) return known
  const dot = method.indexOf('.')
  const domain = dot < 0 ? method : method.slice(0, dot)
  const name = dot < 0 ? '' : method.slice(dot + 1)
  if (name === 'enable' || name === 'disable') return 'setup'
  if (SETUP_DOMAINS.has(domain) || SETUP_METHODS.has(method)) return 'setup'
  if (/^set.*Override/.test(name)) return 'setup'
  if (name.startsWith('get') && SETUP_GET_DOMAINS.has(domain) && !NOT_SETUP_GETS.has(method)) return 'setup'
  if (domain === 'DOM') return 'prep'
  return 'other'
}

/** Modifier keys: while one is held, the keys pressed with it belong to the same press. */
export const MODIFIER_KEYS = new Set(['Shift', 'Control', 'Alt', 'Meta', 'AltGraph'])

/** A key name that is not a character (Enter, Tab, ArrowDown): what a title may show. */
export function isNamedKey(key: string): boolean {
  return key.length > 1 && /^[A-Z][A-Za-z0-9]*$/.test(key)
}
