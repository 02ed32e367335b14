// The event loop's stalls: nodejs_eventloop_lag_{min,max,mean,stddev,p50,p90,p99}_seconds over the
// samples taken since the last scrape. Node's event-loop delay histogram records the time between
// two wakeups of its timer, that is the sampling period plus how late the wakeup came; reported is
// the lateness (what a callback ready at that moment waited), the period subtracted, never below 0.
// An idle loop reports about 0, not the period.
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { Gauge, type Registry } from 'prom-client'

/**
 * Period of the event-loop delay sampler. Every wakeup of an idle process costs ~90 us of CPU on a
 * small VM: at 100 ms the timer alone is half an idle daemon's CPU (0.9 of 1.8 ms/s). A stall is
 * seen when it covers one of the sampler's wakeups, and reported as what was left of it at that
 * moment: one of 500 ms or more always (at least its length less 500 ms), a shorter one in
 * proportion to its length (a 300 ms stall 3 times in 5, at 0-300 ms).
 */
export const EVENT_LOOP_SAMPLE_MS = 500

/** The histogram-derived gauges (prom-client's names), which prom-client's own collector would fill with period + stall. */
export const EVENT_LOOP_GAUGES = ['min', 'max', 'mean', 'stddev', 'p50', 'p90', 'p99'] as const

export interface EventLoopStalls {
  /** Samples taken since the sampler started (tests align a stall with the next one). */
  readonly sampled: number
}

export function eventLoopMetrics(registry: Registry): EventLoopStalls {
  const histogram = monitorEventLoopDelay({ resolution: EVENT_LOOP_SAMPLE_MS })
  histogram.enable()
  let before = 0
  const periodNs = EVENT_LOOP_SAMPLE_MS * 1e6
  const stall = (ns: number) => Math.max(0, ns - periodNs) / 1e9
  const gauges = new Map<(typeof EVENT_LOOP_GAUGES)[number], Gauge>()
  const read = {
    min: () => stall(histogram.min),
    max: () => stall(histogram.max),
    mean: () => stall(histogram.mean),
    // The spread of the periods is the spread of the stalls (a constant was subtracted).
    stddev: () => histogram.stddev / 1e9,
    p50: () => stall(histogram.percentile(50)),
    p90: () => stall(histogram.percentile(90)),
    p99: () => stall(histogram.percentile(99)),
  }
  for (const name of EVENT_LOOP_GAUGES) {
    gauges.set(
      name,
      new Gauge({
        name: `nodejs_eventloop_lag_${name}_seconds`,
        help: `The ${name === 'stddev' ? 'standard deviation' : name} of the event loop's stalls since the last scrape (how late its ${EVENT_LOOP_SAMPLE_MS} ms sampler woke; 0 when nothing blocked it)`,
        registers: [registry],
        // The first gauge read in a scrape sets them all and starts the next window.
        ...(name === 'min'
          ? {
              collect: () => {
                // No sample yet in this window: nothing stalled the loop that was seen.
                const any = histogram.count > 0
                for (const [n, g] of gauges) g.set(any ? read[n]() : 0)
                before += histogram.count
                histogram.reset()
              },
            }
          : {}),
      }),
    )
  }
  return {
    get sampled() {
      return before + histogram.count
    },
  }
}
