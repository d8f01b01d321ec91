import type { Socket } from 'node:net'
import pg from 'pg'
import { LedgerTimeoutError } from './pg-errors.ts'

/**
 * Named statements for a pool: each parameterised statement text gets a name on first use, and
 * every connection of the pool parses it once under that name.
 *
 * Why: Postgres parses and plans an unnamed statement on every run. Baton's ledger statements
 * (the accept, claim and commit CTEs, the attempt read) are large and run thousands of times a
 * second, and parsing and planning were most of their server time. Named, a connection skips the
 * parse, and Postgres may keep a generic plan and skip planning as well.
 *
 * Statements without parameters (`begin`, `commit`, migration scripts of several statements) keep
 * the simple protocol they need. Past `limit` distinct texts (text built from input, say), a new
 * text runs unnamed, as every statement did before; with `limit` 0 nothing is named.
 *
 * Every (text, values) call Kysely makes, named or not, goes to node-postgres's callback form of
 * `query`, and this class makes the promise Kysely awaits: node-postgres's own promise form keeps
 * each query, with its rows and messages, reachable from a closure past the young generation, so
 * every scavenge copies it and pauses longer (`prepared-statements.int.test.ts` holds what
 * survives a loop of statements to a bound). Listed in PATCHES.md.
 */
export function preparingClientClass(limit: number, deadlineMs = 0): typeof pg.Client {
  const names = new Map<string, string>()
  const nameOf = (text: string): string | undefined => {
    const known = names.get(text)
    if (known !== undefined || names.size >= limit) return known
    const name = `baton_${names.size + 1}`
    names.set(text, name)
    return name
  }

  return class PreparingClient extends pg.Client {
    /**
     * Bumped when Postgres refuses a prepared statement whose tables changed shape (a migration
     * while this process runs): the connection prepares every text again under fresh names, and
     * the stale ones go with the connection.
     */
    #generation = 0

    // pg's `query` has many overloads; the (text, values) promise form Kysely uses is answered here,
    // through the callback form, and named when it has values.
    override query(...args: unknown[]): never {
      const [text, values, callback] = args
      if (typeof text !== 'string' || !Array.isArray(values) || callback !== undefined) {
        return (super.query as (...a: unknown[]) => never)(...args)
      }
      const name = values.length === 0 ? undefined : nameOf(text)
      if (name === undefined) return this.#submit({ text, values }) as never
      return this.#named(name, text, values) as never
    }

    /**
     * pg's promise form of `query`, made from its callback form (see above why). With a deadline,
     * a statement unanswered past it has its connection closed and fails with
     * `LedgerTimeoutError`: its answer, if one ever came, would be read as the next statement's.
     * It fails once node-postgres has taken the connection's end in (pg answers the statement
     * then), so the pool, which discards a client whose connection ended, never hands it out again.
     */
    #submit(config: pg.QueryConfig): Promise<pg.QueryResult> {
      return new Promise((resolve, reject) => {
        let timer: NodeJS.Timeout | undefined
        let timedOut = false
        if (deadlineMs > 0) {
          timer = setTimeout(() => {
            timedOut = true
            const connection = (this as unknown as { connection?: { stream?: Socket } }).connection
            connection?.stream?.destroy()
          }, deadlineMs)
        }
        super.query(config, (error: Error | null, result: pg.QueryResult) => {
          clearTimeout(timer)
          if (timedOut) reject(new LedgerTimeoutError(deadlineMs, { cause: error }))
          else if (error) reject(error)
          else resolve(result)
        })
      })
    }

    async #named(name: string, text: string, values: unknown[]): Promise<pg.QueryResult> {
      const generation = this.#generation
      try {
        return await this.#submit({ name: `${name}_${generation}`, text, values })
      } catch (error) {
        if (!isStalePlan(error)) throw error
        if (this.#generation === generation) this.#generation += 1
        // Refused at bind, before it did anything: outside a transaction, running it again under
        // a fresh name is safe. Inside one, the transaction is aborted and its owner decides.
        if (this.getTransactionStatus() !== 'I') throw error
        return await this.#submit({ name: `${name}_${this.#generation}`, text, values })
      }
    }
  }
}

/** "cached plan must not change result type": a prepared `select *` over a table since altered. */
function isStalePlan(error: unknown): boolean {
  const fields = error as { code?: unknown; routine?: unknown }
  return (
    error instanceof Error && fields.code === '0A000' && fields.routine === 'RevalidateCachedQuery'
  )
}
