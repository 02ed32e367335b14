// The JetStream side of shipping: create the stream when it is missing (never change an existing
// one), and ask the stream what it already holds of one browser.
import { nanos } from '@nats-io/transport-node'
import {
  DiscardPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
  type JetStreamManager,
  type StreamInfo,
} from '@nats-io/jetstream'
import { CATEGORIES } from '../events/index.js'
import { HEADER_SEQ, subjectOf } from './subject.js'

/** JetStream API error code "stream name already in use with a different configuration". */
const STREAM_NAME_IN_USE = 10058

export interface StreamLimits {
  /** Duplicate window (>= 2 min): re-sends with the same Nats-Msg-Id inside it are dropped. */
  duplicateWindowMs: number
  /** 0 = unlimited. */
  maxAgeMs: number
  /** 0 = unlimited. */
  maxBytes: number
  replicas: number
}

export interface EnsuredStream {
  created: boolean
  info: StreamInfo
  /** Set when the existing stream's subjects do not cover ours (publishes will get no responders). */
  warning?: string
}

/** Subject pattern match (NATS rules: `*` one token, `>` the rest). */
export function subjectMatches(pattern: string, subject: string): boolean {
  const p = pattern.split('.')
  const s = subject.split('.')
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '>') return s.length > i
    if (i >= s.length) return false
    if (p[i] !== '*' && p[i] !== s[i]) return false
  }
  return p.length === s.length
}

export async function ensureStream(
  jsm: JetStreamManager,
  name: string,
  prefix: string,
  limits: StreamLimits,
  probeSubject: string,
): Promise<EnsuredStream> {
  try {
    const info = await jsm.streams.info(name)
    const covered = (info.config.subjects ?? []).some(p => subjectMatches(p, probeSubject))
    return {
      created: false,
      info,
      warning: covered
        ? undefined
        : `stream ${name} exists but its subjects ${JSON.stringify(info.config.subjects ?? [])} do not cover ${prefix}.>; it is used as is`,
    }
  } catch (err) {
    if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound)) throw err
  }
  try {
    const info = await jsm.streams.add({
      name,
      subjects: [`${prefix}.>`],
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
      discard: DiscardPolicy.Old,
      duplicate_window: nanos(limits.duplicateWindowMs),
      max_age: nanos(limits.maxAgeMs),
      max_bytes: limits.maxBytes > 0 ? limits.maxBytes : -1,
      num_replicas: limits.replicas,
    })
    return { created: true, info }
  } catch (err) {
    // Another daemon created it between our info and add: use theirs as is.
    if (err instanceof JetStreamApiError && err.code === STREAM_NAME_IN_USE) {
      return { created: false, info: await jsm.streams.info(name) }
    }
    throw err
  }
}

/**
 * Highest Telemetry-Seq of this browser the stream holds: the last message of each
 * `<prefix>.<browser>.<category>` subject (one small request per category, sent together). Used after every
 * (re)connect instead of trusting our own timers, because the duplicate window may have passed.
 */
export async function highestStoredSeq(
  jsm: JetStreamManager,
  stream: string,
  prefix: string,
  browserId: string,
): Promise<number> {
  // Asked all at once: a fleet of daemons reconnecting together waits one round trip, not one per category.
  const seqs = await Promise.all(
    CATEGORIES.map(async category => {
      const m = await jsm.streams.getMessage(stream, { last_by_subj: subjectOf(prefix, browserId, category) })
      const seq = Number(m?.header.get(HEADER_SEQ))
      return Number.isSafeInteger(seq) ? seq : 0
    }),
  )
  return Math.max(0, ...seqs)
}
