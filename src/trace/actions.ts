// The trace's action list: the agent's steps (the outer actions) and the actions derived from its
// commands (src/actions), each a `before`/`after` pair on the trace clock, nested under its step.
// Setup actions (enables, overrides, the client's own bookkeeping) are left out: they are not
// something the agent did to a page.
import type { Action, Step } from '../actions/index.js'
import { msOf, pageIdOf, type AfterLine, type BeforeLine, type TraceClock } from './format.js'

const stepCallId = (stepId: string) => `step@${stepId}`

/** Lines of the steps and actions; `endUs` closes what is still open at the window's end. */
export function actionLines(
  clock: TraceClock,
  steps: readonly Step[],
  actions: readonly Action[],
  endUs: number,
): (BeforeLine | AfterLine)[] {
  const out: (BeforeLine | AfterLine)[] = []
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
    out.push({
      type: 'before',
      callId: a.action_id,
      startTime: msOf(clock, a.start_ts),
      // The viewer fills `{name}` from params and leaves any other `{…}` as it is.
      title: a.title,
      class: 'Action',
      method: a.kind,
      params: { commands: a.command_seqs.length },
      ...(pageId !== undefined ? { pageId } : {}),
      ...(a.step_id !== undefined && known.has(a.step_id) ? { parentId: stepCallId(a.step_id) } : {}),
    })
    out.push({
      type: 'after',
      callId: a.action_id,
      endTime: msOf(clock, a.end_ts),
      ...(a.outcome === 'error'
        ? { error: { name: 'Error', message: a.error_message ?? `${a.title}: a command failed or went unanswered` } }
        : {}),
    })
  }
  return out
}
