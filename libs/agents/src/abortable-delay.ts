/**
 * Wait `delayMs`, or reject with the signal's reason as soon as it aborts. The timer is cleared on
 * abort so a cancelled run leaves nothing scheduled behind it (quiescence).
 */
export function abortableDelay(delayMs: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted === true) {
      reject(abortReason(signal))
      return
    }
    const onAbort = (): void => {
      clearTimeout(timer)
      reject(abortReason(signal))
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, delayMs)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

/** Wait until the signal aborts; with no signal this never settles (a hang, on purpose). */
export function untilAborted(signal: AbortSignal | undefined): Promise<never> {
  return new Promise<never>((_resolve, reject) => {
    if (signal === undefined) return
    if (signal.aborted) {
      reject(abortReason(signal))
      return
    }
    signal.addEventListener('abort', () => reject(abortReason(signal)), { once: true })
  })
}

/** The signal's reason as an Error (the AI SDK and fetch both treat it as the abort cause). */
export function abortReason(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason
  if (reason instanceof Error) return reason
  return new DOMException(
    typeof reason === 'string' ? reason : 'The operation was aborted.',
    'AbortError',
  )
}

/** Read `signal.aborted` afresh; a function call defeats TS narrowing from an earlier check. */
export function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true
}
