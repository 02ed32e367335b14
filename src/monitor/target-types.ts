// Target types in one leaf: CDP's TargetInfo.type strings mapped to our target_type, and every set
// of target types the monitor, the capture plan and the collectors decide by. The sets are of
// target_type values; for the types we watch they equal CDP's own strings, so the auto-attach
// filter is built from them too.
import type { Context, TargetType } from '../events/index.js'

/** CDP TargetInfo.type -> target_type ('other' for anything we do not know). */
export function targetTypeOf(cdpType: string): TargetType {
  switch (cdpType) {
    case 'page':
      return 'page'
    case 'iframe':
      return 'iframe'
    case 'worker':
      return 'worker'
    case 'service_worker':
      return 'service_worker'
    case 'shared_worker':
      return 'shared_worker'
    case 'background_page':
      return 'background_page'
    default:
      return 'other'
  }
}

/** What monitor.targets() and the target-attached/detached events report. */
export interface TargetInfo {
  sessionId: string
  targetId: string
  targetType: TargetType
  context: Context
}

/** Targets with frames: Page is enabled on them, their context comes from the frame tree. */
export const FRAME_TYPES: ReadonlySet<TargetType> = new Set(['page', 'iframe', 'background_page'])
/** Targets that render documents the page and interaction collectors read (workers have no DOM). */
export const DOCUMENT_TYPES: ReadonlySet<TargetType> = new Set(['page', 'iframe'])
/** Dedicated, shared and service workers: auto-attached only when a category reports from them. */
export const WORKER_TYPES: ReadonlySet<TargetType> = new Set(['worker', 'shared_worker', 'service_worker'])
/** Targets that exist on their own (not children of a page); attached explicitly if auto-attach missed them. */
export const TOP_LEVEL_TYPES: ReadonlySet<TargetType> = new Set([
  'page',
  'background_page',
  'service_worker',
  'shared_worker',
])
/** Targets whose children (OOPIFs, dedicated workers) are auto-attached through their own session. */
export const PARENT_TYPES: ReadonlySet<TargetType> = new Set([
  'page',
  'iframe',
  'background_page',
  'worker',
  'shared_worker',
  'service_worker',
])
/**
 * CDP types that are not browsing targets: Chromium's own UI (omnibox popups, tab strip) and the
 * tab/browser wrappers. CDP strings with no target_type of their own.
 */
export const IGNORED_CDP_TYPES: ReadonlySet<string> = new Set(['browser', 'tab', 'browser_ui'])
