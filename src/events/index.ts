// The event model: categories, per-type schemas, envelope, validators. Imports nothing of ours.
export * from './captcha.js'
export * from './common.js'
export * from './location.js'
export * from './types.js'
export { storedEventType } from './stored.js'
export * from './vitals.js'
export * from './validate.js'
