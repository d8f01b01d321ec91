// The execution witness of `npm run chaos`: the `witnessed` subagent of `@baton/testing/witness`,
// whose children record each start outside the ledger; chaos's tokens and answers for it.
export { WITNESSED, readWitness, witnessAnswer, writeWitnessSpec } from '@baton/testing/witness'

/** The prompt of delegation `i` of kind `witnessed`: the token its child records when it starts. */
export const witnessToken = (i: number): string => `witness-${i}`
