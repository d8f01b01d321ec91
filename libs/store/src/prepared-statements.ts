import pg from 'pg'

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
 * text runs unnamed, as every statement did before.
 */
export function preparingClientClass(limit: number): typeof pg.Client {
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

    // pg's `query` has many overloads; only the (text, values) promise form Kysely uses is named.
    override query(...args: unknown[]): never {
      const [text, values, callback] = args
      if (
        typeof text !== 'string' ||
        !Array.isArray(values) ||
        values.length === 0 ||
        callback !== undefined
      ) {
        return (super.query as (...a: unknown[]) => never)(...args)
      }
      const name = nameOf(text)
      if (name === undefined) return super.query(text, values) as never
      return this.#named(name, text, values) as never
    }

    async #named(name: string, text: string, values: unknown[]): Promise<pg.QueryResult> {
      const generation = this.#generation
      try {
        return await super.query({ name: `${name}_${generation}`, text, values })
      } catch (error) {
        if (!isStalePlan(error)) throw error
        if (this.#generation === generation) this.#generation += 1
        // Refused at bind, before it did anything: outside a transaction, running it again under
        // a fresh name is safe. Inside one, the transaction is aborted and its owner decides.
        if (this.getTransactionStatus() !== 'I') throw error
        return await super.query({ name: `${name}_${this.#generation}`, text, values })
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
