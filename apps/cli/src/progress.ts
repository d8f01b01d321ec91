// The live progress line of a wait on a terminal: redrawn in place every tick, so the elapsed time
// moves even while the status reads (bounded waits) are blocked on the server.
import { CLEAR_LINE, progressFrame } from './render.ts'

/** How often the line is redrawn. */
export const PROGRESS_TICK_MS = 100

export interface ProgressLine {
  /** Records what is known of the attempt and redraws at once. */
  update(known: { readonly status?: string; readonly attemptId?: string }): void
  /** Stops redrawing and erases the line, leaving the cursor where the final output starts. */
  stop(): void
}

export function startProgressLine(out: { write(text: string): unknown }): ProgressLine {
  const started = performance.now()
  let status = 'submitting'
  let attemptId: string | undefined
  const draw = (): void => {
    out.write(progressFrame({ status, elapsedMs: performance.now() - started, attemptId }))
  }
  const timer = setInterval(draw, PROGRESS_TICK_MS)
  draw()
  return {
    update(known) {
      status = known.status ?? status
      attemptId = known.attemptId ?? attemptId
      draw()
    },
    stop() {
      clearInterval(timer)
      out.write(CLEAR_LINE)
    },
  }
}
