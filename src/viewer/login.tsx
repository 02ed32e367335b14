// Sign-in: the token form shown when this tab holds no token (or the daemon refused the one it had).
import { useState } from 'preact/hooks'

export function Login({ error, onToken }: { error: string; onToken(t: string): void }) {
  const [value, setValue] = useState('')
  return (
    <main class="login">
      <h1>browser-telemetry session viewer</h1>
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
    </main>
  )
}
