// The execution witness of `npm run chaos`: the `witnessed` markdown subagent runs, with
// `provider: acp`, the agent in witness-agent.ts, which appends its task token to a file next to
// the process logs the moment it starts. The audit (@baton/testing/ledger-audit) then checks the
// ledger against that file. Nothing in Baton's own code paths knows about it.
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const WITNESSED = 'witnessed'

const WITNESS_AGENT = fileURLToPath(new URL('./witness-agent.ts', import.meta.url))

/** The prompt of delegation `i` of kind `witnessed`: the token its child records when it starts. */
export const witnessToken = (i: number): string => `witness-${i}`
/** What a witnessed child that completes answers. */
export const witnessAnswer = (token: string): string => `witnessed ${token}`

/** Writes the subagent's spec into `subagentsDir`; answers the witness file its children append to. */
export async function writeWitnessSpec(subagentsDir: string, logDir: string): Promise<string> {
  const witnessFile = join(logDir, 'witness.log')
  await writeFile(witnessFile, '')
  await writeFile(
    join(subagentsDir, `${WITNESSED}.md`),
    `---
name: ${WITNESSED}
description: Records that it started, outside the ledger, then answers
provider: acp
command: ${process.execPath}
args: [${JSON.stringify(WITNESS_AGENT)}, --witness, ${JSON.stringify(witnessFile)}]
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
