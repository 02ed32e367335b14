// Agent actions and steps derived from a window of envelopes (pure: no I/O, no Node APIs; the
// session viewer bundles it too).
export { ActionBuilder, deriveActions, noEffects, pathOf, JOIN_US } from './derive.js'
export { stepsOf } from './steps.js'
export { roleOf, isNamedKey, type Role } from './methods.js'
export { PREP_GAP_US, STROKE_GAP_US } from './group.js'
export { ACTION_CATEGORIES } from './derive.js'
export { ACTION_KINDS, type Action, type ActionEffects, type ActionKind, type Step } from './types.js'
