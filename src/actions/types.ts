// What the actions module hands out: an agent's actions and steps as derived from a window of
// envelopes. Plain data (JSON as the API serves it, the bundle writes it and the viewer draws it).

export const ACTION_KINDS = [
  'setup',
  'navigate',
  'click',
  'type',
  'press',
  'scroll',
  'evaluate',
  'screenshot',
  'other',
] as const
export type ActionKind = (typeof ACTION_KINDS)[number]

/** What happened on the action's target while it was the target's latest action. */
export interface ActionEffects {
  /** Main-frame page_navigation events. */
  navigations: number
  /** network_request events (each redirect hop counts). */
  requests: number
  /** Requests that failed (network_loading_failed) or were answered with a status >= 400, each once. */
  failed_requests: number
  /** console_error, and console_log with level error. */
  console_errors: number
  /** page_dialog_opened. */
  dialogs: number
  /** page_download_started. */
  downloads: number
  /** A page_crashed of the target. */
  crashed: boolean
}

export interface Action {
  /** `a<seq>`: the seq of the action's first command (unique within one derivation). */
  action_id: string
  kind: ActionKind
  /** Short and free of anything typed: "click #buy", "type 12 characters into #email", "go to /checkout". */
  title: string
  /** The agent step its commands carry (for setup: only when all of them carry the same one). */
  step_id?: string
  connection_id: string
  /** Absent for commands sent to the browser itself (no session). */
  target_id?: string
  /** Unix microseconds: the first command's send time (its envelope's ts minus its duration). */
  start_ts: number
  /** Unix microseconds: the last answer (a navigate: or the main-frame navigation it caused, if later). */
  end_ts: number
  /** error when any of its commands failed or went unanswered, or its call failed (error_message). */
  outcome: 'ok' | 'error'
  /** A call that failed before it sent its input (a click that timed out): the error its step ended with. */
  error_message?: string
  /** Its commands' seqs, ascending (a folded cdp_command is one). */
  command_seqs: number[]
  effects: ActionEffects
  /**
   * Unix microseconds, exclusive: where the effects window ended (the next action on the target, or
   * a navigate's page_navigation_settled). Absent when it ran to the end of the window read.
   */
  effects_end_ts?: number
}

/** An agent step (agent_step_started joined with its agent_step_finished). */
export interface Step {
  step_id: string
  name: string
  parent_step_id?: string
  connection_id?: string
  /** Unix microseconds. */
  start_ts: number
  /** Absent while the step is open (no agent_step_finished in the window). */
  end_ts?: number
  outcome?: 'ok' | 'error' | 'abandoned'
  duration_ms?: number
  error_message?: string
}
