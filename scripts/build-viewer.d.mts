// Types of build-viewer.mjs (imported by tests and bench/viewer.ts).
export declare const DEFAULT_OUT_DIR: string
export declare function buildViewer(opts?: {
  outDir?: string
  minify?: boolean
}): Promise<{ outDir: string; files: string[] }>
