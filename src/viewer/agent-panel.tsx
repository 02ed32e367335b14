// The Agent panel's views: a row of its tree (step, action, the Setup group, a command) with its
// twisty and effect badges, and the detail pane of a step, an action or the Setup group.
import type { ActionEffects } from '../actions/index.js'
import {
  commandSummary,
  effectBadges,
  fmtTime,
  type AgentRow,
  type ActionRow,
  type SetupRow,
  type StepRow,
} from './model.js'

const ms = (us: number) => `${(us / 1000).toFixed(0)} ms`

/** One row of the Agent panel's tree: its twisty, time, kind, title, duration and effect badges. */
export function AgentRowView({ row, onToggle }: { row: AgentRow; onToggle?(key: string): void }) {
  const twisty = (
    <span
      class="twisty"
      aria-hidden="true"
      data-toggle={row.key}
      onClick={e => {
        if (!row.parent) return
        e.stopPropagation()
        onToggle?.(row.key)
      }}
    >
      {row.parent ? (row.open ? '▾' : '▸') : ''}
    </span>
  )
  const state = row.parent ? <span class="sr-only">{row.open ? ' (expanded)' : ' (collapsed)'}</span> : null
  const depth = `depth-${Math.min(row.depth, 6)}`
  switch (row.kind) {
    case 'step': {
      const s = row.step
      return (
        <div class={`cols agent k-step ${depth} ${row.failed ? 'bad' : ''}`} data-key={row.key}>
          {twisty}
          <span class="c-time">{fmtTime(s.start_ts)}</span>
          <span class="a-kind">step</span>
          <span class="a-title" title={s.name}>
            {s.name}
            {state}
          </span>
          <span class="a-count">
            {row.actions} action{row.actions === 1 ? '' : 's'}
          </span>
          <span class="a-dur">
            {s.duration_ms !== undefined ? `${s.duration_ms.toFixed(0)} ms` : 'open'}
            {s.outcome && s.outcome !== 'ok' ? ` · ${s.outcome}` : ''}
          </span>
          <Badges effects={row.effects} />
        </div>
      )
    }
    case 'action': {
      const a = row.action
      return (
        <div
          class={`cols agent k-action kind-${a.kind} ${depth} ${a.outcome === 'error' ? 'bad' : ''}`}
          data-key={row.key}
        >
          {twisty}
          <span class="c-time">{fmtTime(a.start_ts)}</span>
          <span class="a-kind">{a.kind}</span>
          <span class="a-title" title={a.title}>
            {a.title}
            {state}
          </span>
          <span class="a-count">
            {a.command_seqs.length} command{a.command_seqs.length === 1 ? '' : 's'}
          </span>
          <span class="a-dur">
            {ms(a.end_ts - a.start_ts)}
            {a.outcome === 'error' ? ' · error' : ''}
          </span>
          <Badges effects={a.effects} />
        </div>
      )
    }
    case 'setup':
      return (
        <div class={`cols agent k-setup ${depth} ${row.failed ? 'bad' : ''}`} data-key={row.key}>
          {twisty}
          <span class="c-time">{fmtTime(row.ts)}</span>
          <span class="a-kind">setup</span>
          <span class="a-title">
            Setup
            {state}
          </span>
          <span class="a-count">
            {row.actions.length} action{row.actions.length === 1 ? '' : 's'} · {row.commands} commands
          </span>
          <span class="a-dur">{row.failed ? 'error' : ''}</span>
          <span class="badges" />
        </div>
      )
    case 'cmd': {
      const cmd = commandSummary(row.env)!
      return (
        <div
          class={`cols agent k-cmd cmd ${depth} ${cmd.failed ? 'cmd-failed' : ''} ${cmd.slow ? 'cmd-slow' : ''}`}
          data-key={row.key}
        >
          {twisty}
          <span class="c-time">{fmtTime(row.env.event.ts)}</span>
          <span class="a-kind c-type">{cmd.outcome}</span>
          <span class="a-title c-text" title={cmd.error ?? cmd.method}>
            {cmd.method} · {cmd.durationMs.toFixed(0)} ms{cmd.slow ? ' · slow' : ''}
            {cmd.error ? ` · ${cmd.error}` : ''}
          </span>
        </div>
      )
    }
  }
}

function Badges({ effects }: { effects: ActionEffects }) {
  return (
    <span class="badges">
      {effectBadges(effects).map(b => (
        <span key={b.kind} class={`badge b-${b.kind}`}>
          {b.label}
        </span>
      ))}
    </span>
  )
}

/** The detail pane of a step, an action or the Setup group. */
export function AgentDetails({ row }: { row: StepRow | ActionRow | SetupRow }) {
  const line = (k: string, v: string | number | undefined) =>
    v === undefined || v === '' ? null : (
      <tr key={k}>
        <th scope="row">{k}</th>
        <td>{v}</td>
      </tr>
    )
  if (row.kind === 'setup')
    return (
      <div>
        <h2>Setup</h2>
        <p>
          What the clients sent to prepare the browser and its targets (domains enabled, auto-attach, emulation, init
          scripts, isolated worlds, metadata reads): {row.actions.length} action{row.actions.length === 1 ? '' : 's'},{' '}
          {row.commands} commands{row.failed ? ', some failed' : ''}.
        </p>
      </div>
    )
  if (row.kind === 'step') {
    const s = row.step
    return (
      <div>
        <h2>
          Step: {s.name} <span class="muted">{fmtTime(s.start_ts)}</span>
        </h2>
        <table class="kv">
          <tbody>
            {line('outcome', s.outcome ?? 'open')}
            {line('duration', s.duration_ms !== undefined ? `${s.duration_ms.toFixed(1)} ms` : undefined)}
            {line('error', s.error_message)}
            {line('actions', row.actions)}
            {line('step id', s.step_id)}
            {line('parent step', s.parent_step_id)}
            {line('connection', s.connection_id)}
          </tbody>
        </table>
        <Effects effects={row.effects} />
      </div>
    )
  }
  const a = row.action
  return (
    <div>
      <h2>
        {a.title} <span class="muted">{fmtTime(a.start_ts)}</span>
      </h2>
      <table class="kv">
        <tbody>
          {line('kind', a.kind)}
          {line('outcome', a.outcome)}
          {line('error', a.error_message)}
          {line('duration', `${((a.end_ts - a.start_ts) / 1000).toFixed(1)} ms`)}
          {line('commands', a.command_seqs.length)}
          {line('step', a.step_id)}
          {line('target', a.target_id)}
          {line('connection', a.connection_id)}
          {line(
            'effects until',
            a.effects_end_ts !== undefined ? fmtTime(a.effects_end_ts) : 'the end of the loaded window',
          )}
        </tbody>
      </table>
      <Effects effects={a.effects} />
    </div>
  )
}

function Effects({ effects: e }: { effects: ActionEffects }) {
  return (
    <section>
      <h3>Effects on its page</h3>
      <table class="kv effects">
        <tbody>
          <tr>
            <th scope="row">navigations</th>
            <td>{e.navigations}</td>
          </tr>
          <tr>
            <th scope="row">requests</th>
            <td>{e.requests}</td>
          </tr>
          <tr>
            <th scope="row">failed requests</th>
            <td class={e.failed_requests ? 'err' : ''}>{e.failed_requests}</td>
          </tr>
          <tr>
            <th scope="row">console errors</th>
            <td class={e.console_errors ? 'err' : ''}>{e.console_errors}</td>
          </tr>
          <tr>
            <th scope="row">dialogs</th>
            <td>{e.dialogs}</td>
          </tr>
          <tr>
            <th scope="row">downloads</th>
            <td>{e.downloads}</td>
          </tr>
          <tr>
            <th scope="row">crashed</th>
            <td class={e.crashed ? 'err' : ''}>{e.crashed ? 'yes' : 'no'}</td>
          </tr>
        </tbody>
      </table>
    </section>
  )
}
