// The daemon's own CDP domain, BrowserTelemetry, answered by the proxy on the agent's socket so an
// automation library can mark its steps with the session it already has (Playwright's
// CDPSession.send, Puppeteer's session.send). Its commands never reach the browser.
import type { StepRegistry } from '../agent/step-registry.js'
import { ServiceError } from '../errors.js'

const DOMAIN = Buffer.from('"BrowserTelemetry.')

/** Could this client frame be a BrowserTelemetry command? (cheap; the caller parses to be sure) */
export function isTelemetryCommand(data: Buffer): boolean {
  return data.length > 0 && data[0] === 0x7b && data.indexOf(DOMAIN) !== -1
}

/**
 * The answer to a BrowserTelemetry command as the frame to send back, or undefined when the frame
 * is not one (the domain name only appeared inside another command's parameters): relay it.
 */
export function answerTelemetryCommand(
  data: Buffer,
  connectionId: string,
  steps: StepRegistry | undefined,
): string | undefined {
  let msg: { id?: unknown; method?: unknown; params?: unknown; sessionId?: unknown }
  try {
    msg = JSON.parse(data.toString()) as typeof msg
  } catch {
    return undefined
  }
  if (msg === null || typeof msg !== 'object' || typeof msg.method !== 'string') return undefined
  if (!msg.method.startsWith('BrowserTelemetry.')) return undefined
  // Without a numeric id there is nothing to answer to; the browser would refuse it too.
  if (typeof msg.id !== 'number') return undefined
  const reply = (body: object) =>
    JSON.stringify({ id: msg.id, ...body, ...(typeof msg.sessionId === 'string' ? { sessionId: msg.sessionId } : {}) })
  const params = (msg.params ?? {}) as Record<string, unknown>
  if (params === null || typeof params !== 'object' || Array.isArray(params))
    return reply({ error: { code: -32602, message: 'Invalid parameters', data: 'params: expected an object' } })
  try {
    switch (msg.method) {
      case 'BrowserTelemetry.startStep': {
        if (!steps) throw new ServiceError(503, 'unavailable', 'agent steps are not available')
        const { stepId } = steps.start('cdp', {
          name: params.name,
          attributes: params.attributes,
          parentStepId: params.parentStepId,
          connectionId,
        })
        return reply({ result: { stepId } })
      }
      case 'BrowserTelemetry.endStep': {
        if (!steps) throw new ServiceError(503, 'unavailable', 'agent steps are not available')
        steps.end(params.stepId, { outcome: params.outcome, errorMessage: params.errorMessage }, connectionId)
        return reply({ result: {} })
      }
      default:
        // Chromium's own answer for a method it does not know.
        return reply({ error: { code: -32601, message: `'${msg.method}' wasn't found` } })
    }
  } catch (err) {
    if (err instanceof ServiceError) {
      const invalid = err.status === 400 || err.status === 413
      return reply({
        error: {
          code: invalid ? -32602 : -32000,
          message: invalid ? 'Invalid parameters' : err.message,
          data: camelFields(err.details?.[0]?.message ?? err.message),
        },
      })
    }
    throw err
  }
}

/** The HTTP API's field names in a message, as the CDP method's parameters spell them. */
function camelFields(message: string): string {
  return message.replace(/^(step_id|parent_step_id|error_message)\b/, f =>
    f.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase()),
  )
}
