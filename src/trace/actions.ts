// The trace's action list: the agent's steps (the outer actions) and the actions derived from its
// commands (src/actions), each a `before`/`after` pair on the trace clock, nested under its step.
// Setup actions (enables, overrides, the client's own bookkeeping) are left out: they are not
// something the agent did to a page.
import type { Action, Step } from '../actions/index.js'
import {
  frameScreenshot,
  msOf,
  pageIdOf,
  type AfterLine,
  type BeforeLine,
  type ScreenshotLine,
  type ScreencastFrameLine,
  type TraceClock,
} from './format.js'

const stepCallId = (stepId: string) => `step@${stepId}`

/** The last frame of a page at or before a moment (ms on the trace clock); frames are in time order. */
function frameAt(frames: readonly ScreencastFrameLine[], pageId: string, ms: number): ScreencastFrameLine | undefined {
  let hit: ScreencastFrameLine | undefined
  for (const f of frames) {
    if (f.timestamp > ms) break
    if (f.pageId === pageId && f.width > 0) hit = f
  }
  return hit
}

/**
 * Lines of the steps and actions; `endUs` closes what is still open at the window's end. With the
 * film strip's frames, each action's "Before" and "After" is the frame of its page on screen when
 * it started and when it ended.
 */
export function actionLines(
  clock: TraceClock,
  steps: readonly Step[],
  actions: readonly Action[],
  endUs: number,
  frames: readonly ScreencastFrameLine[] = [],
): (BeforeLine | AfterLine | ScreenshotLine)[] {
  const out: (BeforeLine | AfterLine | ScreenshotLine)[] = []
  const known = new Set(steps.map(s => s.step_id))
  for (const s of steps) {
    const callId = stepCallId(s.step_id)
    out.push({
      type: 'before',
      callId,
      startTime: msOf(clock, s.start_ts),
      title: s.name,
      class: 'Step',
      method: 'step',
      params: {},
      ...(s.parent_step_id !== undefined && known.has(s.parent_step_id)
        ? { parentId: stepCallId(s.parent_step_id) }
        : {}),
    })
    const failed = s.outcome === 'error' || s.outcome === 'abandoned'
    out.push({
      type: 'after',
      callId,
      endTime: msOf(clock, s.end_ts ?? endUs),
      ...(failed ? { error: { name: 'Error', message: s.error_message ?? `step ${s.outcome}` } } : {}),
    })
  }
  for (const a of actions) {
    if (a.kind === 'setup') continue
    const pageId = pageIdOf(a.target_id)
    const startTime = msOf(clock, a.start_ts)
    const endTime = msOf(clock, a.end_ts)
    const before = pageId !== undefined ? frameAt(frames, pageId, startTime) : undefined
    const after = pageId !== undefined ? frameAt(frames, pageId, endTime) : undefined
    out.push({
      type: 'before',
      callId: a.action_id,
      startTime,
      // The viewer fills `{name}` from params and leaves any other `{…}` as it is.
      title: a.title,
      class: 'Action',
      method: a.kind,
      params: { commands: a.command_seqs.length },
      ...(pageId !== undefined ? { pageId } : {}),
      ...(a.step_id !== undefined && known.has(a.step_id) ? { parentId: stepCallId(a.step_id) } : {}),
    })
    if (before) out.push(frameScreenshot(a.action_id, 'before', before))
    out.push({
      type: 'after',
      callId: a.action_id,
      endTime,
      ...(a.outcome === 'error'
        ? { error: { name: 'Error', message: a.error_message ?? `${a.title}: a command failed or went unanswered` } }
        : {}),
    })
    if (after) out.push(frameScreenshot(a.action_id, 'after', after))
  }
  return out
}
