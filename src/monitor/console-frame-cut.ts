// Huge console arguments cut in the raw CDP frame, before it is decoded and parsed. A page's
// `console.log('y'.repeat(8 << 20))` arrives as one 8 MB frame; parsed whole it exists as the
// frame, an 8 MB string and an 8 MB value at once, and costs tens of ms of one uninterrupted turn
// of the event loop. The console collector keeps at most `maxUnits` UTF-16 units of any argument
// (renderArgs cuts each to the envelope cap, since more could never fit), so the frame's long
// `"value":"..."` strings are shortened to maxUnits + 1 units first: the event built from the
// shorter frame is identical (same kept prefix, still marked cut). Only strings after a `"value":`
// key are touched: console arguments (RemoteObject.value) and their previews, all rendered
// through that same cut; stack frames, URLs and everything else stay as Chromium sent them.
import { isAscii } from 'node:buffer'

const CONSOLE_EVENT = Buffer.from('"method":"Runtime.consoleAPICalled"')
const VALUE_KEY = Buffer.from('"value":"')
const QUOTE = 0x22
const BACKSLASH = 0x5c
/**
 * Unescaped-quote searches a frame may cost before the cut gives up (escaped quotes, `\"`, make
 * each string end a loop in JS; past this the frame is parsed whole, as without the cut).
 */
const QUOTE_STEPS = 100_000

/** True for a Runtime.consoleAPICalled event frame (Chromium writes the method first). */
export function isConsoleEventFrame(frame: Buffer): boolean {
  return frame.subarray(0, 256).indexOf(CONSOLE_EVENT) !== -1
}

/**
 * The frame with every `"value"` string longer than `maxUnits` UTF-16 units cut to maxUnits + 1
 * units (on a character and escape boundary); undefined when nothing was cut or the frame is not
 * one the cut understands (then it is parsed as it is).
 */
export function cutConsoleFrame(frame: Buffer, maxUnits: number): Buffer | undefined {
  const keep = maxUnits + 1
  const parts: Buffer[] = []
  let copied = 0 // frame[0, copied) is in parts
  let steps = QUOTE_STEPS
  for (let k = frame.indexOf(VALUE_KEY); k !== -1;) {
    const start = k + VALUE_KEY.length
    // The string's closing quote: the first one not escaped (an even run of backslashes before it).
    let end = frame.indexOf(QUOTE, start)
    for (;;) {
      if (end === -1 || --steps === 0) return undefined
      let b = end - 1
      while (b >= start && frame[b] === BACKSLASH) b--
      if ((end - 1 - b) % 2 === 0) break
      end = frame.indexOf(QUOTE, end + 1)
    }
    // Fewer raw bytes than units kept: it cannot be longer than that many units.
    if (end - start > keep) {
      const cutAt = prefixEnd(frame, start, end, keep)
      if (cutAt < end) {
        parts.push(frame.subarray(copied, cutAt))
        copied = end // the closing quote and what follows
      }
    }
    k = frame.indexOf(VALUE_KEY, end + 1)
  }
  if (parts.length === 0) return undefined
  parts.push(frame.subarray(copied))
  return Buffer.concat(parts)
}

/**
 * The end of the shortest prefix of the raw JSON string content frame[start, end) that decodes to
 * at least `units` UTF-16 units, never inside an escape or a UTF-8 sequence; `end` if shorter.
 */
function prefixEnd(frame: Buffer, start: number, end: number, units: number): number {
  // Plain ASCII without escapes (the common huge argument): one byte per unit.
  if (isAscii(frame.subarray(start, start + units)) && frame.subarray(start, start + units).indexOf(BACKSLASH) === -1)
    return start + units
  let i = start
  let n = 0
  while (i < end && n < units) {
    const c = frame[i]!
    if (c === BACKSLASH) {
      i += frame[i + 1] === 0x75 /* u */ ? 6 : 2
      n++
    } else if (c < 0x80) {
      i++
      n++
    } else if (c < 0xe0) {
      i += 2
      n++
    } else if (c < 0xf0) {
      i += 3
      n++
    } else {
      i += 4
      n += 2
    } // outside the BMP: a surrogate pair
  }
  return Math.min(i, end)
}
