// A navigation's detail: its Web Vitals with their rating and attribution, and its longest
// animation frames (the navigation row's detail pane shows it under the milestones).
import { VITAL_NAMES, vitalText, type Navigation } from './model.js'

/** A navigation's Web Vitals with their rating and attribution, and its longest animation frames. */
export function NavVitals({ nav }: { nav: Navigation }) {
  const names = VITAL_NAMES.filter(v => nav.vitals[v] !== undefined)
  const longest = [...nav.longFrames].sort((a, b) => b.durationMs - a.durationMs).slice(0, 10)
  return (
    <>
      {names.length > 0 ? (
        <>
          <h3>Web Vitals</h3>
          <table class="kv" id="nav-vitals">
            <tbody>
              {names.map(name => {
                const v = nav.vitals[name]!
                const a = Object.entries(v.attribution).filter(([, x]) => x !== undefined)
                return (
                  <tr key={name} data-vital={name}>
                    <th scope="row">{name}</th>
                    <td>
                      <span class={`vital v-${v.rating}`}>
                        {vitalText(name, v.value)} ({v.rating})
                      </span>{' '}
                      <span class="muted">seq {v.seq}</span>
                      {a.length > 0 ? (
                        <ul class="attribution">
                          {a.map(([k, x]) => (
                            <li key={k}>
                              {k}:{' '}
                              <code>
                                {typeof x === 'number'
                                  ? x.toFixed(name === 'CLS' && k.endsWith('value') ? 4 : 0)
                                  : typeof x === 'string'
                                    ? x
                                    : JSON.stringify(x)}
                              </code>
                            </li>
                          ))}
                        </ul>
                      ) : null}
                    </td>
                  </tr>
                )
              })}
            </tbody>
          </table>
        </>
      ) : null}
      {nav.longFrameCount > 0 ? (
        <>
          <h3>Long animation frames ({nav.longFrameCount})</h3>
          <ul id="nav-long-frames">
            {longest.map(f => (
              <li key={f.seq}>
                {f.durationMs.toFixed(0)} ms at {f.atMs.toFixed(0)} ms: <code>{f.label}</code>{' '}
                <span class="muted">seq {f.seq}</span>
              </li>
            ))}
          </ul>
        </>
      ) : null}
    </>
  )
}
