// Installing a collector's page script: a CDP binding that exists only in the collector's isolated
// world, and a script run in that world of every current and future document of a target. The
// interaction collector and the Web Vitals collector each install their own (own binding, own world).
import type { TargetSession } from '../src/collector-kit.js'

/** A binding payload as a JSON object, or undefined when it is too long, not JSON or not an object. */
export function parseBindingPayload(payload: unknown, maxChars: number): Record<string, unknown> | undefined {
  if (typeof payload !== 'string' || payload.length > maxChars) return undefined
  let raw: unknown
  try {
    raw = JSON.parse(payload)
  } catch {
    return undefined
  }
  return typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? (raw as Record<string, unknown>) : undefined
}

/**
 * Sets up the binding and the script for every current and future document of the target; returns
 * the new-document script's id. Each step is best effort: a failure (counted and logged by the
 * session, quietly when the tab went away) ends the injection, and detach() undoes what was done.
 */
export async function injectPageScript(
  session: TargetSession,
  bindingName: string,
  worldName: string,
  source: string,
): Promise<string | undefined> {
  // Runtime must be enabled for bindingCalled to be delivered (and Runtime.disable drops the
  // binding), Page for the new-document script to run in later documents (verified against
  // Chromium 156): the monitor's capture plan keeps both on while a collector using this is attached.
  // Sent together, answered in order: one round trip to a paused target instead of two (with many
  // tabs opening at once, each round trip to a starting renderer costs seconds).
  const [binding, added] = await Promise.all([
    // The binding exists only in our world's contexts, present and future.
    session.sendMayFail('Runtime.addBinding', { name: bindingName, executionContextName: worldName }),
    // Every future document of every frame of this target. runImmediately also covers the
    // current documents where Chromium supports it; injectCurrentDocuments below does it
    // explicitly for older browsers (the agent's guard makes the second run a no-op).
    session.sendMayFail('Page.addScriptToEvaluateOnNewDocument', { source, worldName, runImmediately: true }),
  ])
  if (!binding || !added) return added?.identifier
  // A tab created with a URL may have committed its first document before the new-document script
  // was registered. runImmediately (sent before the monitor resumes the tab: a session's commands
  // run in order) covers it; this covers browsers without it.
  await injectCurrentDocuments(session, worldName, source)
  return added.identifier
}

/** Runs the script in our isolated world of every frame the target has now (loaded before we attached). */
export async function injectCurrentDocuments(session: TargetSession, worldName: string, source: string): Promise<void> {
  const tree = await session.sendMayFail('Page.getFrameTree')
  if (!tree) return
  const frames: string[] = []
  const walk = (node: typeof tree.frameTree): void => {
    frames.push(node.frame.id)
    for (const child of node.childFrames ?? []) walk(child)
  }
  walk(tree.frameTree)
  await Promise.all(
    frames.map(async frameId => {
      // Same world name -> Chromium returns the world the new-document script already uses. A frame
      // that navigated or detached meanwhile gets the new-document script instead.
      const world = await session.sendMayFail('Page.createIsolatedWorld', { frameId, worldName })
      if (world)
        await session.sendMayFail('Runtime.evaluate', { expression: source, contextId: world.executionContextId })
    }),
  )
}
