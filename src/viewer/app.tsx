// The session viewer's shell: sign-in (the token lives only in sessionStorage, taken from a link's
// fragment) or a debug bundle (picked, dropped, or named by ?bundle=), then the viewer of that source.
import { useEffect, useState } from 'preact/hooks'
import { forgetToken, readToken, saveToken, takeTokenFromFragment } from './event-feed.js'
import { Login } from './login.js'
import { Viewer } from './session-view.js'

/** `?bundle=<name>.zip`: a bundle served next to the page (`browser-telemetry view`). */
function bundleParam(): string | undefined {
  return new URLSearchParams(location.search).get('bundle') ?? undefined
}

export function App() {
  const [boot, setBoot] = useState(() => takeTokenFromFragment())
  const [token, setToken] = useState(readToken())
  const [authError, setAuthError] = useState('')
  const [bundle, setBundle] = useState<{ file: Blob; name: string; n: number }>()
  const [bundleNote, setBundleNote] = useState(() => (bundleParam() ? 'Loading the bundle…' : ''))
  const openBundleFile = (file: Blob, name: string) => {
    setBundleNote('')
    setBundle(b => ({ file, name, n: (b?.n ?? 0) + 1 }))
  }
  // A link pasted into an open viewer tab changes only the fragment (no reload): its token is taken
  // the same way, at any time, and the viewer starts again with it.
  useEffect(() => {
    const onHashChange = () => {
      if (!/(?:^#|&)(?:token|browser)=/.test(location.hash)) return
      setBoot(takeTokenFromFragment())
      const fresh = readToken()
      if (fresh) {
        setAuthError('')
        setToken(fresh)
      }
    }
    window.addEventListener('hashchange', onHashChange)
    return () => window.removeEventListener('hashchange', onHashChange)
  }, [])
  useEffect(() => {
    const wanted = bundleParam()
    if (wanted === undefined) return
    if (!/^[A-Za-z0-9._-]{1,200}\.zip$/.test(wanted)) {
      setBundleNote(`bundle=${wanted.slice(0, 100)}: expected the name of a .zip served next to this page`)
      return
    }
    fetch(`./${wanted}`, { cache: 'no-store' })
      .then(async res => {
        if (!res.ok) throw new Error(`${res.status} ${res.statusText}`)
        openBundleFile(await res.blob(), wanted)
      })
      .catch((err: unknown) => setBundleNote(`Cannot load ${wanted}: ${(err as Error).message}`))
  }, [])
  // A bundle dropped anywhere on the page opens it.
  useEffect(() => {
    const over = (e: DragEvent) => {
      if (e.dataTransfer?.types.includes('Files')) e.preventDefault()
    }
    const drop = (e: DragEvent) => {
      const f = e.dataTransfer?.files[0]
      if (!f) return
      e.preventDefault()
      openBundleFile(f, f.name)
    }
    window.addEventListener('dragover', over)
    window.addEventListener('drop', drop)
    return () => {
      window.removeEventListener('dragover', over)
      window.removeEventListener('drop', drop)
    }
  }, [])
  if (bundle) {
    return (
      <Viewer
        key={`bundle\n${bundle.n}`}
        source={{ kind: 'bundle', file: bundle.file, name: bundle.name }}
        onOpenBundle={openBundleFile}
        onAuthError={() => {}}
      />
    )
  }
  if (!token || bundleNote) {
    return (
      <Login
        error={authError}
        note={bundleNote}
        onToken={t => {
          saveToken(t)
          setAuthError('')
          setBundleNote('')
          setToken(t)
        }}
        onBundle={openBundleFile}
      />
    )
  }
  return (
    <Viewer
      key={`${token}\n${boot.browser ?? ''}`}
      source={{ kind: 'live', token, browserHint: boot.browser }}
      onOpenBundle={openBundleFile}
      onAuthError={m => {
        forgetToken()
        setAuthError(m)
        setToken(undefined)
      }}
    />
  )
}
