// How much of what a piece of code allocates outlives the young generation's collections.
//
// V8 frees short-lived objects in cheap scavenges, whose pause grows with the bytes that survive
// them. An object can survive without anything live referring to it: one whose hidden class is
// its own (an object literal with getters, a per-instance `Object.defineProperty` getter) is held
// from the old generation until a full mark-compact, and so is all it refers to. Tests use this to
// show that what a hot path makes for each call dies young.
import v8 from 'node:v8'
import { runInNewContext } from 'node:vm'

type Gc = (options?: { type?: 'major' | 'minor'; execution?: 'sync' | 'async' }) => void

let gc: Gc | undefined

function collector(): Gc {
  if (gc === undefined) {
    v8.setFlagsFromString('--expose-gc')
    // A context made after the flag is set has `gc`.
    gc = runInNewContext('gc') as Gc
  }
  return gc
}

/**
 * Heap bytes per call still in use after `make` ran `count` times, the event loop turned once (so
 * that settled promises ran their reactions) and two scavenges followed (an object that survives
 * two is promoted to the old generation). What `make` returns is dropped at once, so a result near
 * 0 means it all died young.
 *
 * The least of `rounds` such measurements, each after a full collection: whatever else the process
 * allocates meanwhile (the test runner's own messages, in the turn of the event loop) only adds to
 * a round, while what `make` keeps alive shows in every round.
 */
export async function bytesSurvivingScavenges(
  make: () => unknown,
  count = 2_000,
  rounds = 3,
): Promise<number> {
  let least = Number.POSITIVE_INFINITY
  for (let round = 0; round < rounds; round += 1) {
    const perCall = await survivingPerCall(async () => {
      for (let i = 0; i < count; i += 1) make()
    }, count)
    least = Math.min(least, perCall)
  }
  return least
}

/**
 * Heap bytes per call still in use after `count` calls of `run`, each awaited before the next (a
 * round trip to a server, say), then two scavenges: what each call leaves alive, or keeps alive
 * only from dead objects, shows here; what dies young does not.
 *
 * The median of `rounds` (at least 1; 3 by default) such measurements, each after a full
 * collection. Awaited calls take long enough for the collector to act meanwhile: a full
 * collection that starts during a round frees what that round promoted and makes it read low, and
 * the test runner's own work makes a round read high, so with three rounds or more neither the
 * least nor the greatest is taken.
 */
export async function bytesSurvivingScavengesAwaited(
  run: () => Promise<unknown>,
  count = 6_000,
  rounds = 3,
): Promise<number> {
  if (!Number.isInteger(rounds) || rounds < 1) throw new RangeError('rounds must be 1 or more')
  const perCall: number[] = []
  for (let round = 0; round < rounds; round += 1) {
    perCall.push(
      await survivingPerCall(async () => {
        for (let i = 0; i < count; i += 1) await run()
      }, count),
    )
  }
  return perCall.sort((a, b) => a - b)[Math.floor(rounds / 2)] as number
}

/**
 * One round: a full collection, `calls` (which makes `count` calls), a turn of the event loop (so
 * that settled promises ran their reactions), two scavenges; the heap's growth per call.
 */
async function survivingPerCall(calls: () => Promise<void>, count: number): Promise<number> {
  const collect = collector()
  collect({ type: 'major' })
  const before = v8.getHeapStatistics().used_heap_size
  await calls()
  await new Promise((resolve) => setImmediate(resolve))
  collect({ type: 'minor' })
  collect({ type: 'minor' })
  return (v8.getHeapStatistics().used_heap_size - before) / count
}
