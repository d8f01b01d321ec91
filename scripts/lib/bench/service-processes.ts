// Starts a yardstick service as the bench runs Baton: one API process and `workers` worker
// processes, through the same launcher; if one fails to start, every one is stopped.
import { spawnEntry, type AppProcess } from '@baton/testing/processes'

export interface ServiceEntries {
  /** Used in process names: `<name>-api`, `<name>-worker-1`, … */
  readonly name: string
  readonly api: { readonly entry: string; readonly readyMessage: string }
  readonly worker: { readonly entry: string; readonly readyMessage: string }
}

export async function startApiAndWorkers(
  service: ServiceEntries,
  env: Record<string, string>,
  workers: number,
): Promise<AppProcess[]> {
  const started = [
    spawnEntry(service.api.entry, env, {
      name: `${service.name}-api`,
      readyMessage: service.api.readyMessage,
      outputLimit: 20_000,
    }),
    ...Array.from({ length: workers }, (_, i) =>
      spawnEntry(service.worker.entry, env, {
        name: `${service.name}-worker-${i + 1}`,
        readyMessage: service.worker.readyMessage,
        outputLimit: 20_000,
      }),
    ),
  ]
  try {
    await Promise.all(started.map((p) => p.ready))
  } catch (error) {
    await Promise.all(started.map((p) => p.close()))
    throw error
  }
  return started
}
