// Which tab's frames a video shows. Two visible tabs both paint, so their screencast frames
// alternate in time; shown as one sequence they flicker between pages. A video is one tab: the one
// asked for, else the tab with the most frames (the one the agent worked in). Pure: the viewer's
// player and the bundle's recording.webm use it alike.

/** The frames of one tab, in their order: `targetId`'s when it has any, else the busiest tab's. */
export function oneTrack<F extends { target_id?: string }>(frames: readonly F[], targetId?: string): F[] {
  const counts = new Map<string | undefined, number>()
  for (const f of frames) counts.set(f.target_id, (counts.get(f.target_id) ?? 0) + 1)
  if (counts.size <= 1) return frames.slice()
  let track: string | undefined = targetId
  if (track === undefined || !counts.has(track)) {
    let best = -1
    for (const [id, n] of counts)
      if (n > best) {
        best = n
        track = id
      }
  }
  return frames.filter(f => f.target_id === track)
}
