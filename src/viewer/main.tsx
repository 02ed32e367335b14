// Entry point of the viewer bundle (esbuild: src/viewer/main.tsx -> dist/viewer/app-<hash>.js).
import { render } from 'preact'
import { App } from './app.js'
import './style.css'

render(<App />, document.getElementById('root')!)
