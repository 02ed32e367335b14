// The start page: sign in to the daemon with a token, or open a debug bundle from disk (file picker
// or drop anywhere on the page), which needs no daemon at all.
import { useState } from 'preact/hooks'
import { OpenBundleButton } from './toolbar.js'

export function Login({
  error,
  note,
  onToken,
  onBundle,
}: {
  error: string
  /** About a bundle being loaded (or why it could not be). */
  note?: string
  onToken(t: string): void
  onBundle(file: Blob, name: string): void
}) {
  const [value, setValue] = useState('')
  return (
    <main class="login">
      <h1>browser-telemetry session viewer</h1>
      {note ? (
        <p role="status" class="note" id="bundle-note">
          {note}
        </p>
      ) : null}
      <form
        onSubmit={e => {
          e.preventDefault()
          if (value.trim()) onToken(value.trim())
        }}
      >
        <label for="token">
          API token (needs the <code>read</code> scope)
        </label>
        <input
          id="token"
          name="token"
          type="password"
          autocomplete="off"
          value={value}
          onInput={e => setValue((e.target as HTMLInputElement).value)}
        />
        <button type="submit">Open session</button>
        {error ? (
          <p role="alert" class="err">
            {error}
          </p>
        ) : null}
        <p class="muted">
          Run <code>browser-telemetry open</code> for a link that signs in by itself. The token is kept in this tab only
          (sessionStorage).
        </p>
      </form>
      <section class="bundle-open" aria-labelledby="bundle-heading">
        <h2 id="bundle-heading">Or open a debug bundle</h2>
        <p class="muted">
          A zip from <code>browser-telemetry bundle</code> or the viewer's Download bundle button. It is read in this
          page only: nothing is uploaded, no daemon is needed. Drop it anywhere on the page, or:
        </p>
        <OpenBundleButton onBundle={onBundle} />
      </section>
    </main>
  )
}
