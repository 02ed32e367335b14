// A short, deterministic account of a window for an agent or a person: its steps with their
// actions and effects, navigations with vitals, failures, errors with mapped frames, incidents and
// drops, within a character budget (pure: no I/O).
export { DigestCollector, type DigestRecord } from './collect.js'
export { renderDigest, DEFAULT_DIGEST_CHARS, MIN_DIGEST_CHARS, MAX_DIGEST_CHARS } from './render.js'
export type * from './types.js'
