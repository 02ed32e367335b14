// What a bundle reads of the screen recording's frame store (src/recording/frame-store.ts): pages of
// frame metadata, the JPEG bytes, the gaps. A daemon without a frame store still writes bundles
// (an empty frames/index.json; the manifest says the recording was off).
import type { FrameGap, FrameMeta, FrameStore } from '../recording/frame-store.js'

export type { FrameGap, FrameMeta }

export type BundleFrames = Pick<FrameStore, 'list' | 'read' | 'gaps'>
