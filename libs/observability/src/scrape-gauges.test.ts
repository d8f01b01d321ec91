import { describe, expect, it } from 'vitest'
import { createApiMetrics } from './api-metrics.ts'

/** The value of one sample line (`name{labels} value`) of a scrape, or undefined. */
function sample(text: string, line: string): number | undefined {
  const found = text.split('\n').find((l) => l.startsWith(`${line} `))
  return found === undefined ? undefined : Number(found.slice(line.length + 1))
}

describe('scrape-time gauges', () => {
  it('read every source once per scrape, and a failing source empties its gauge without failing the scrape', async () => {
    const reads = { queue: 0, artifacts: 0 }
    let artifactsDown = false
    const errors: string[] = []
    const metrics = createApiMetrics({
      queueJobs: () => {
        reads.queue += 1
        return Promise.resolve({ waiting: 3, active: 1 })
      },
      artifactBytes: () => {
        reads.artifacts += 1
        return artifactsDown
          ? Promise.reject(new Error('postgres down'))
          : Promise.resolve([{ namespaceId: 'tenant-a', bytes: 2048 }])
      },
      onError: (source) => errors.push(source),
    })

    const first = await metrics.registry.metrics()
    expect(reads).toEqual({ queue: 1, artifacts: 1 })
    expect(sample(first, 'baton_queue_jobs{state="waiting"}')).toBe(3)
    expect(sample(first, 'baton_artifact_bytes{namespace="tenant-a"}')).toBe(2048)
    expect(sample(first, 'baton_scrape_source_up{source="artifacts"}')).toBe(1)
    // No source, no gauge: an empty family would read as "no continuations".
    expect(first).not.toContain('baton_continuations')

    artifactsDown = true
    const second = await metrics.registry.metrics()
    expect(reads).toEqual({ queue: 2, artifacts: 2 })
    expect(errors).toEqual(['artifacts'])
    expect(sample(second, 'baton_scrape_source_up{source="artifacts"}')).toBe(0)
    expect(sample(second, 'baton_artifact_bytes{namespace="tenant-a"}')).toBeUndefined()
    expect(sample(second, 'baton_scrape_source_up{source="queue"}')).toBe(1)
    expect(sample(second, 'baton_queue_jobs{state="active"}')).toBe(1)
  })
})
