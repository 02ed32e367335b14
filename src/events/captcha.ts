// The captcha solver's events (category captcha, published through ingest): a task started
// (captcha_solve_started), a task's outcome (captcha_solve_result) and a visible challenge's own
// outcome (captcha_challenge_result). Tasks join on task_id; one challenge's tasks on challenge_id.
import { Type } from '@sinclair/typebox'
import { plain } from './common.js'

/**
 * Captcha kinds as the service document lists them for captcha_solve_result (`other` covers
 * anything unmatched), and the solver's kinds on its other events, press-and-hold challenges too.
 */
export const SOLVE_RESULT_CAPTCHA_TYPES = [
  'hcaptcha',
  'recaptcha_v2',
  'recaptcha_v3',
  'turnstile',
  'geetest',
  'other',
] as const
export const CAPTCHA_TYPES = [...SOLVE_RESULT_CAPTCHA_TYPES, 'press_and_hold'] as const
const CaptchaTypeSchema = Type.Union(CAPTCHA_TYPES.map(v => Type.Literal(v)))
const OptStr = () => Type.Optional(Type.String())
/** Where the page was: its host, and its path only (no query string or fragment). */
const PAGE = { website_host: OptStr(), website_path: Type.Optional(Type.String({ pattern: '^[^?#]*$' })) }

export const CaptchaSolveStartedData = plain({
  captcha_type: CaptchaTypeSchema,
  challenge_id: OptStr(),
  task_id: OptStr(),
  ...PAGE,
})

export const CaptchaSolveResultData = plain({
  captcha_type: Type.Union(SOLVE_RESULT_CAPTCHA_TYPES.map(v => Type.Literal(v))),
  status: Type.Union(['success', 'failure', 'timeout', 'abandoned'].map(v => Type.Literal(v))),
  duration_ms: Type.Number({ minimum: 0 }),
  task_id: OptStr(),
  challenge_id: OptStr(),
  error_code: OptStr(),
  ...PAGE,
})

/** Once per visible challenge; its tasks may each have a solve result. */
export const CaptchaChallengeResultData = plain({
  captcha_type: CaptchaTypeSchema,
  challenge_id: Type.String({ minLength: 1 }),
  status: Type.Union(['solved', 'failure', 'timeout', 'abandoned'].map(v => Type.Literal(v))),
  duration_ms: Type.Number({ minimum: 0 }),
  ...PAGE,
})
