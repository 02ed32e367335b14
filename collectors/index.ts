// Every CDP collector the daemon runs, in one list: the wiring passes its settings and gets the
// collectors the monitor attaches to each target, plus the ones whose counters /metrics reads. A new
// collector is a file in this folder (with its `capture` declaration: category, target types,
// domains, page scripts) and a row here; the capture plan places it from that declaration.
import type { Bounds, Collector, Logger, PlannedCollector, SourceMaps } from '../src/collector-kit.js'
import { CONSOLE_CAPTURE, createConsoleCollector } from './console.js'
import { createInteractionCollector, INTERACTION_CAPTURE, type InteractionCollector } from './interaction.js'
import { createNetworkCollector, NETWORK_CAPTURE } from './network.js'
import { createPageCollector, PAGE_CAPTURE } from './page.js'
import { createPerfTraceCollector, type PerfTraceCollector } from './perf-trace.js'
import {
  createRecordingCollector,
  RECORDING_CAPTURE,
  type RecordingCollector,
  type RecordingCollectorOptions,
} from './recording.js'
import { createScreenshotCollector } from './screenshot.js'
import { createVitalsCollector, VITALS_CAPTURE } from './vitals.js'

export { startSystemCollectors, type SystemCollectors } from './system.js'
export type { InteractionCollector, PerfTraceCollector, RecordingCollector }

/**
 * The declarations of the planned collectors, in list order, without building them: what the capture
 * plan of the daemon's collectors is (tests, benches and the cost table read it; a test pins it
 * equal to createCollectors' list).
 */
export const CAPTURE_NEEDS: readonly PlannedCollector[] = [
  { name: 'console', capture: CONSOLE_CAPTURE },
  { name: 'network', capture: NETWORK_CAPTURE },
  { name: 'page', capture: PAGE_CAPTURE },
  { name: 'vitals', capture: VITALS_CAPTURE },
  { name: 'interaction', capture: INTERACTION_CAPTURE },
  { name: 'recording', capture: RECORDING_CAPTURE },
]

export interface CollectorSettings {
  bounds: Bounds
  /** Whether a category is enabled now, and a subscription to changes of the enabled set. */
  isEnabled: (category: 'network' | 'screenshot') => boolean
  onCategoriesChanged: (listener: (enabled: ReadonlySet<string>) => void) => () => void
  networkBodyMaxBytes: number
  screenshotIntervalMs: number
  maxEnvelopeBytes: number
  /** The screen recording's frame sink and limits. */
  recording: Pick<RecordingCollectorOptions, 'sink' | 'lastSeq' | 'maxFps' | 'quality' | 'maxWidth' | 'maxHeight'>
  logger: Logger
  /** Source maps for console stacks (absent: stacks stored as Chromium sent them). */
  sourceMaps?: SourceMaps
  /** Whether printable keys are stored without their value now (read at each key). */
  maskTypedKeys?: () => boolean
}

export interface Collectors {
  /** What the monitor attaches to every target, in this order. */
  list: Collector[]
  /** The binding actions against flooding pages (/metrics). */
  interaction: InteractionCollector
  /** The screencast: frames received, kept and dropped (/metrics, the recording routes). */
  screencast: RecordingCollector
  /** Performance traces on demand (the perf trace routes start them). */
  perfTrace: PerfTraceCollector
}

export function createCollectors(s: CollectorSettings): Collectors {
  const interaction = createInteractionCollector({ logger: s.logger, maskTypedKeys: s.maskTypedKeys })
  const screencast = createRecordingCollector({ ...s.recording, logger: s.logger })
  const perfTrace = createPerfTraceCollector()
  const list: Collector[] = [
    createConsoleCollector({ bounds: s.bounds, sourceMaps: s.sourceMaps }),
    createNetworkCollector({
      bodyMaxBytes: s.networkBodyMaxBytes,
      bounds: s.bounds,
      isEnabled: () => s.isEnabled('network'),
    }),
    createPageCollector({ bounds: s.bounds }),
    createVitalsCollector({ bounds: s.bounds, logger: s.logger }),
    interaction,
    createScreenshotCollector({
      intervalMs: s.screenshotIntervalMs,
      maxBytes: s.maxEnvelopeBytes,
      isEnabled: () => s.isEnabled('screenshot'),
      onEnabledChange: l => s.onCategoriesChanged(c => l(c.has('screenshot'))),
      logger: s.logger,
    }),
    screencast,
    perfTrace,
  ]
  return { list, interaction, screencast, perfTrace }
}
