// The execution witness of the fault tests and chaos: a markdown subagent (`provider: acp`) whose
// child, the agent in witness-agent.ts, appends its task (its whole prompt) to a file the moment
// it starts. The ledger audit (`auditExecutionWitness`) then checks the ledger against that file.
// Nothing in Baton's own code paths knows about it.
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The name of the witnessed subagent. */
export const WITNESSED = 'witnessed'

const WITNESS_AGENT = fileURLToPath(new URL('./witness-agent.ts', import.meta.url))

/** What a witnessed child that completes answers to `token`. */
export const witnessAnswer = (token: string): string => `witnessed ${token}`

/**
 * Writes the subagent's spec into `subagentsDir`, its children recording their starts in a new
 * `witness.log` of `logDir`; answers that file. Each child works 100 ms plus up to `workMs` more.
 */
export async function writeWitnessSpec(
  subagentsDir: string,
  logDir: string,
  options: { readonly workMs?: number } = {},
): Promise<string> {
  const witnessFile = join(logDir, 'witness.log')
  await writeFile(witnessFile, '')
  const work =
    options.workMs === undefined ? '' : `, --work-ms, ${JSON.stringify(String(options.workMs))}`
  await writeFile(
    join(subagentsDir, `${WITNESSED}.md`),
    `---
name: ${WITNESSED}
description: Records that it started, outside the ledger, then answers
provider: acp
command: ${process.execPath}
args: [${JSON.stringify(WITNESS_AGENT)}, --witness, ${JSON.stringify(witnessFile)}${work}]
---
(External agents bring their own instructions.)
`,
  )
  return witnessFile
}

/** Starts per token, as recorded in the witness file. */
export async function readWitness(witnessFile: string): Promise<Map<string, number>> {
  const starts = new Map<string, number>()
  for (const line of (await readFile(witnessFile, 'utf8')).split('\n')) {
    const token = line.split(' ')[0]
    if (token === undefined || token === '') continue
    starts.set(token, (starts.get(token) ?? 0) + 1)
  }
  return starts
}
